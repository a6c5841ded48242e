"""The virtual fab: the domain model (vfab.model), the deterministic data
generator (vfab.generate) and the questions asked of it (vfab.queries).

vfab knows nothing of storages: it builds and walks persistent objects,
whatever database (or none) holds them.
"""
