"""The exported dataset's formats: webdataset tars, loaders' index files and its usage README."""
