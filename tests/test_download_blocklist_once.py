"""The download stage loads its blocklists once for the run and passes them down."""

import sys

from image_server import LoopbackImageServer, write_sample_stage

from imagenot.pipeline.config.schema import Config, Download, Sampling
from imagenot.pipeline.download import stage as download_stage
from imagenot.pipeline.frame.registry import declared, run_in_folder


def test_the_run_fetches_with_the_blocklist_its_preparation_loaded(tmp_path, monkeypatch):
    listed = tmp_path / "blocklist.txt"
    listed.write_text("domain blocked.example\n")
    settings = Download(enabled=True, timeout_s=1, image_size=64, allowed_networks=["127.0.0.1/32"])
    config = Config(
        download=settings.model_copy(update={"blocklists": [str(listed)]}),
        sampling=Sampling(images_per_class=1, test_per_class=1),
    )
    load, callers = download_stage.load_blocklists, []

    def counted(paths):
        callers.append(sys._getframe(1).f_code.co_name)
        return load(paths)

    monkeypatch.setattr(download_stage, "load_blocklists", counted)
    with LoopbackImageServer() as server:
        classes = {"n00000001": (["http://blocked.example/a.jpg"], [server.url("/photo/coffee.jpg?id=a1")])}
        write_sample_stage(tmp_path / "run", classes)
        figures = run_in_folder(declared("download"), config, str(tmp_path / "run"))

    assert figures["failures"] == {"blocklist_domain": 1} and figures["images"] == 1
    assert [source["path"] for source in figures["blocklists"]] == [str(listed)]
    # once for the run (its preparation) and once for the fingerprint the registry records
    assert sorted(callers) == ["carry_over", "settings"]
