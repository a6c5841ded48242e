"""The virtual fab: the domain model (vfab.model), the deterministic data
generator (vfab.generate) and the questions asked of it (vfab.queries).

vfab knows nothing of storages: it builds and walks persistent objects,
whatever database (or none) holds them.  vfab.codec, the JSON derived
from dataclasses, stands here, on the lowest floor, for storages' options
and scenarios' results alike.
"""
