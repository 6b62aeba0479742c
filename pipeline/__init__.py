from imagenot.pipeline.run.storage_auth import configure as _configure_storage_auth

# Every process that runs our stages imports this package first (the driver, each Beam worker,
# img2dataset's workers through the download stage), so each skips the credential wait here.
_configure_storage_auth()
