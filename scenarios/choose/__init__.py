"""vfab-bench choose: which storage for this workload (docs/choose.md)."""
