"""Private helpers shared by the indexes: argument checks and array conversion (arrays), ids
(ids), allow-sets for filters (allow), the index file format (fileformat), progress bars
(progress), CUDA device arrays and device numbers (device_arrays, cuda)."""
