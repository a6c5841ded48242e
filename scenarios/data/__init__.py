"""Data sets kept in directories: populate writes them, serve and census read
them.
"""
