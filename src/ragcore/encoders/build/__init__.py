"""Making models: the fused BERT graph, the export from PyTorch, int8 quantisation and the
derived files built at first use. Nothing here runs per query; the runtime (BiEncoder,
CrossEncoder) only reads what these write."""
