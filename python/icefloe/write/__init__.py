"""Writing: data files, delete files and row-level operations."""
