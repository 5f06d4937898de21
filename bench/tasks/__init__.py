"""The tasks of bench/run.py: each module's run(grid, out_dir, command) measures every
installed adapter of bench/peers/ on the grid and writes one ragcore-bench/1 result file."""

TASKS = ("exact", "ann", "bm25", "encode", "ingest", "collection", "fusion", "fuzz")
