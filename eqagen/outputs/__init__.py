"""Parquet schemas, the shard writer, the manifest, readers, the dataset card and exports."""
