#!/bin/sh
# Builds imagepipe's container image without a container engine (`make image`): a Debian 12 slim
# root made by mmdebstrap with the package `make deb` built installed in it (apt brings the runtime
# libraries its Depends name, and its postinst the user `imagepipe`), put into an OCI layout by umoci
# and written as one tar that is both an OCI image layout (podman load, skopeo, umoci) and what
# `docker load` reads (its manifest.json beside the same blobs).
#
# Usage: deploy/image/build-image.sh PACKAGE.deb ARCHIVE.tar VERSION [MIRROR]
set -eu

deb=$(realpath "$1")
# The image libraries' minimum versions (the package's Depends enforce them), named in a label too.
minimums=$(grep -v '^#' "$(dirname "$(realpath "$0")")/../debian/decoder-minimums" | awk 'NF { printf "%s%s>=%s", sep, $1, $2; sep = ", " }')
archive=$2
version=$3
mirror=${4:-}
name=imagepipe

work=$(mktemp -d "${TMPDIR:-/tmp}/imagepipe-image.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The slim variant of Debian's own images: minbase without documentation, manuals or translations
# (the copyright files stay). ca-certificates for S3 and Supabase over TLS.
mmdebstrap --quiet --mode=root --variant=minbase --format=directory \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
    --include=ca-certificates --include="$deb" \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/cache/debconf/*-old "$1"/var/log/*' \
    --customize-hook='mkdir -p "$1"/var/lib/imagepipe/queue/inbox "$1"/var/lib/imagepipe/variants' \
    --customize-hook='chroot "$1" chown -R imagepipe:imagepipe /var/lib/imagepipe' \
    bookworm "$work/rootfs" ${mirror:+"$mirror"}

uid=$(chroot "$work/rootfs" id -u imagepipe)
gid=$(chroot "$work/rootfs" id -g imagepipe)

layout="$work/oci"
umoci init --layout "$layout"
umoci new --image "$layout:$version"
umoci unpack --image "$layout:$version" "$work/bundle" > /dev/null
rm -rf "$work/bundle/rootfs"
mv "$work/rootfs" "$work/bundle/rootfs"
umoci repack --image "$layout:$version" "$work/bundle"
# What a runtime needs to run it: imagepipe as a user of its own, the example configuration's watch
# by default (its queue and outputs under /var/lib/imagepipe, the volume), and the metrics port.
umoci config --image "$layout:$version" \
    --config.user "$uid:$gid" \
    --config.entrypoint /usr/bin/imagepipe \
    --config.cmd=watch --config.cmd=--config --config.cmd=/etc/imagepipe/imagepipe.toml \
    --config.workingdir /var/lib/imagepipe \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.env LANG=C.UTF-8 \
    --config.env IMAGEPIPE_METRICS_ADDRESS=:9464 \
    --config.exposedports 9464/tcp \
    --config.volume /var/lib/imagepipe \
    --config.label org.opencontainers.image.title=imagepipe \
    --config.label org.opencontainers.image.version="$version" \
    --config.label org.opencontainers.image.licenses=Apache-2.0 \
    --config.label org.opencontainers.image.base.name=debian:bookworm-slim \
    --config.label io.imagepipe.decoder-minimums="$minimums" \
    --config.label org.opencontainers.image.description="imagepipe worker: originals into web variants. Metrics on :9464/metrics, liveness GET :9464/healthz, readiness GET :9464/readyz" \
    --config.stopsignal SIGTERM \
    --history.created_by "deploy/image/build-image.sh"
umoci gc --layout "$layout"

# The tag by name too, as skopeo and podman read it (oci:LAYOUT:imagepipe:VERSION).
manifest=$(python3 - "$layout" "$version" "$name" <<'EOF'
import json, sys
layout, version, name = sys.argv[1:4]
with open(f"{layout}/index.json") as f:
    index = json.load(f)
entry = next(m for m in index["manifests"] if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == version)
entry["annotations"]["io.containerd.image.name"] = f"docker.io/library/{name}:{version}"
with open(f"{layout}/index.json", "w") as f:
    json.dump(index, f)
digest = entry["digest"].split(":", 1)[1]
with open(f"{layout}/blobs/sha256/{digest}") as f:
    manifest = json.load(f)
# docker load reads manifest.json: the config and the layers, by path in the archive.
docker = [{
    "Config": "blobs/sha256/" + manifest["config"]["digest"].split(":", 1)[1],
    "RepoTags": [f"{name}:{version}"],
    "Layers": ["blobs/sha256/" + layer["digest"].split(":", 1)[1] for layer in manifest["layers"]],
}]
with open(f"{layout}/manifest.json", "w") as f:
    json.dump(docker, f)
print(digest)
EOF
)
mkdir -p "$(dirname "$archive")"
tar --sort=name --owner=0 --group=0 --numeric-owner -C "$layout" -cf "$archive" .
echo "$archive: $name:$version, manifest sha256:$manifest, $(du -h "$archive" | cut -f1)"
