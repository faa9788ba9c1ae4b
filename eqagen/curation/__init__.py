"""Dataset-level stages: per-question balancing across scenes and stratified train/val/test splits."""

from eqagen.curation.balance import balance, blind_baseline, select_balanced
from eqagen.curation.config import BalanceConfig, SplitConfig
from eqagen.curation.split_file import read_split_file, write_split_file
from eqagen.curation.splits import assign_splits, split

__all__ = [
    "BalanceConfig",
    "SplitConfig",
    "assign_splits",
    "balance",
    "blind_baseline",
    "read_split_file",
    "select_balanced",
    "split",
    "write_split_file",
]
