"""Census: what a database holds, by class, read without writing."""
