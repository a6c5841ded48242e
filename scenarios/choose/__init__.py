"""vfab-bench choose: which storage for this workload (issue 44)."""
