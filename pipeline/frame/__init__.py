"""What every stage stands on: the registry of declared stages and their order, the run of one
stage (its folder opened, its figures recorded), `imagenot build`'s walk over them, the stage
command built from a declaration and its options, the run's config file, preflight, and the Beam
runner. It imports no stage; stages and the commands above them import it."""
