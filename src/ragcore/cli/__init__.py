"""The ``ragcore`` command line (main), its demos, the datasets and embedding cache they use,
and the ``ragcore bench`` harness (cli.bench)."""
