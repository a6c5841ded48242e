"""Concurrent load: the operation mix, sessions with conflict retries, the
journal and its check, zeoloop and the locust glue.
"""
