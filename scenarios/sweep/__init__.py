"""The commit-cost sweep: cost per object against objects per transaction, for
several container shapes.
"""
