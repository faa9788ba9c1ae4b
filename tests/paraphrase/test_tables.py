import pyarrow as pa

from eqagen.core.records import Paraphrase
from eqagen.paraphrase.tables import PARAPHRASE_TYPE, paraphrase_array, records_from_table
from tests.paraphrase.fixtures import sample_records


def test_records_survive_a_round_trip_through_a_table():
    records = sample_records()
    table = pa.Table.from_pylist([r.to_dict() for r in records])
    back = records_from_table(table)
    assert [r.question_id for r in back] == [r.question_id for r in records]
    assert [r.to_dict() for r in back] == [r.to_dict() for r in records]


def test_the_paraphrase_column_has_the_struct_type():
    column = paraphrase_array([Paraphrase("q", "a", "m", True, 2), Paraphrase("q2", "a2", "", False, 0, "why")])
    assert column.type == PARAPHRASE_TYPE
    assert column.to_pylist() == [
        {"question": "q", "answer": "a", "model": "m", "validated": True, "attempts": 2, "reason": ""},
        {"question": "q2", "answer": "a2", "model": "", "validated": False, "attempts": 0, "reason": "why"},
    ]


def test_the_paraphrase_type_has_one_definition():
    import eqagen.outputs.schemas as schemas

    assert schemas.PARAPHRASE_TYPE is PARAPHRASE_TYPE  # imported, not a second copy kept equal by hand
    assert schemas.QUESTIONS_SCHEMA.field("paraphrase").type == PARAPHRASE_TYPE


def test_a_questions_table_as_the_outputs_write_it_is_read_too():
    from eqagen.outputs.schemas import questions_table

    records = sample_records()
    back = records_from_table(questions_table(records))
    assert [r.to_dict() for r in back] == [r.to_dict() for r in records]
