"""The numbers of a run: problems, sampling, data sets, the network and its derivative channels, metrics."""
