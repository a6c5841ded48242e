"""vfab-bench scale: how many clients each storage carries (see docs/scale.md)."""
