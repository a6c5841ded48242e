"""The commit-cost sweep: cost per object against objects per transaction,
in a BTree and in one flat PersistentList, to show ZODB's pickler-memo
trap (docs/sweep.md).
"""
