"""Many instance files: inputs, the local or Dask workers, the run with its resume, and the summary."""
