"""vfab-bench trend: saved run files put in order by the versions they
recorded, each cell's trend with its steps marked (runs.py finds and orders
the files, trend.py the table, page.py the page)."""
