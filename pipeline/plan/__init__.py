"""`imagenot plan`: the work, the jobs and the bill of a build before it starts."""
