# Worker image for Dataflow: Beam's Python 3.11 SDK image plus imagenot with its gcp extra (Beam's
# Google Cloud clients, which the image already has, and gcsfs, through which img2dataset writes
# gs://; torch held by constraints.txt) and WordNet 3.0 prepared inside, from the pinned Debian
# packages (wordnet/nltk_data.py checks their files' digests).
# Build: docker build -t REGION-docker.pkg.dev/PROJECT/REPO/imagenot-worker:TAG .
FROM apache/beam_python3.11_sdk:2.77.0

# Slim Debian images exclude man pages from packages, but NLTK's `lexnames` file is generated
# from `man 5 lexnames`, so that one page is let through.
RUN echo 'path-include /usr/share/man/man5/lexnames.5WN.gz' > /etc/dpkg/dpkg.cfg.d/imagenot-wordnet \
 && apt-get update \
 && apt-get install -y --no-install-recommends wordnet-base=1:3.0-37 wordnet-sense-index=1:3.0-37 \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/imagenot
COPY pyproject.toml constraints.txt README.md ./
COPY imagenot ./imagenot
COPY pipeline ./pipeline
COPY wordnet ./wordnet
COPY filters ./filters
COPY labels ./labels
RUN pip install --no-cache-dir -c constraints.txt '.[gcp]'
# open_clip without its declared torchvision and timm: see pipeline/audit/clip_model.py.
RUN pip install --no-cache-dir -c constraints.txt --no-deps open_clip_torch==3.3.0

ENV IMAGENOT_CACHE=/opt/imagenot/cache
RUN imagenot wordnet-prepare
