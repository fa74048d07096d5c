# kcoord as a container: `docker build -t kcoord .` (see docs/compose.md).
# The base is an argument so the image builds without a registry: any Debian-like
# image with python3 (>= 3.11) and its venv module will do.
ARG BASE=python:3.12-slim
FROM ${BASE}

# Extra pip options, e.g. "--no-index --find-links /src/wheels" for an offline build.
ARG PIP_OPTIONS=""

# The image's settings come before the install: the classic builder commits every
# instruction through a container, and a storage driver without copy-on-write (vfs, as in
# the compose test) copies the whole image for each; after the install that is ~10 s apiece.
ENV PATH=/opt/kcoord/bin:$PATH \
    PYTHONUNBUFFERED=1
EXPOSE 9092
# Healthy = the Kafka listener answers an ApiVersions round trip (see kcoord/admin/healthcheck.py).
HEALTHCHECK --interval=5s --timeout=5s --start-period=5s --retries=3 \
    CMD ["python3", "-m", "kcoord.admin.healthcheck"]
CMD ["kcoord", "serve", "--listen", "0.0.0.0:9092", "--advertised", "kcoord:9092", "--data-dir", "/data"]

RUN useradd --system --create-home --uid 10001 kcoord \
 && mkdir -p /data && chown kcoord:kcoord /data
VOLUME ["/data"]
WORKDIR /home/kcoord

COPY . /src
RUN python3 -m venv /opt/kcoord \
 && /opt/kcoord/bin/pip install --no-cache-dir ${PIP_OPTIONS} "/src[examples]" \
 && cp -r /src/examples /opt/kcoord/examples \
 && rm -rf /src
USER kcoord
