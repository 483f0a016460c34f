# The flowbridge add-on's own lines. `make addon` (packaging/addon.sh) appends them to
# deploy/Dockerfile as the add-on's Dockerfile: the package built from the sources in src/
# (build.yaml: PACKAGE_FROM=source, SOURCE=src) in the official Swift image, installed onto
# BUILD_FROM, then the run script, and jq and curl for it (the options and the Supervisor's MQTT
# service are JSON).
USER root
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends jq curl \
    && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
COPY run.sh /run.sh
# Home Assistant's /data and /config belong to root; the add-on's container is its sandbox.
# run.sh puts the state (state_file) and the config in /data.
ENTRYPOINT []
CMD ["/run.sh"]
