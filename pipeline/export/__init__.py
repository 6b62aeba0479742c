"""The export stage: the final dataset as one folder of webdataset tars, parquet metadata and a README."""
