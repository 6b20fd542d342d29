"""Data parallelism: DataParallel and its reducer, the process groups and their transports, the
rendezvous store, and the job that starts and watches the ranks."""
