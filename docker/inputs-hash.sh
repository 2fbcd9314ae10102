#!/bin/sh
# The inputs hash of a lockbench image (src/image.rs, `content_hash`, holds the two in
# agreement): the first 16 hex digits of the SHA-256 of the image's Dockerfile, its entrypoint,
# the Debian release and the packages, separated by NUL bytes. `lockbench images` tags each image
# it builds with it (`lockbench/etcd:3.5-inputs-<hash>`), and `.ci/run` tags the images it builds
# beside the compile the same way.
#
# Usage: docker/inputs-hash.sh IMAGE RELEASE PACKAGES   (a row of docker/versions.tsv)
set -eu
dir=$(dirname "$0")/$1
{
  cat "$dir/Dockerfile"
  printf '\0'
  cat "$dir/entrypoint.sh"
  printf '\0%s\0%s' "$2" "$3"
} | sha256sum | cut -c1-16
