#!/usr/bin/env bash
# Gathers gettext catalogs (human translations of program messages) from
# Debian packages, offline from the package archive: downloads each package
# (apt-get download, no install) and unpacks it (dpkg -x) under OUT/<package>/.
# Then:
#   t2t-datagen --problem=translate_gettext --data_dir=D \
#       --train_files=OUT --language_pair=en-de
# Usage: examples/gettext_corpus.sh OUT [package ...]   (default: the list below)
# Needs apt-get and dpkg (a Debian or Ubuntu machine; run `apt-get update` once).
# Each package's licence is in OUT/<package>/usr/share/doc/<package>/copyright.
set -euo pipefail
out=${1:?usage: $0 OUT [package ...]}
shift || true
packages=("$@")
if [ ${#packages[@]} -eq 0 ]; then
  # Debian 12 packages with German catalogs (docs/translation.md lists versions,
  # catalog counts and licences).
  packages=(
    libreoffice-l10n-de vlc-l10n inkscape gnucash-common gramps freeciv-data
    gcc-12-locales evolution-common kdenlive-data digikam-data marble-data blender-data
    gimp-data audacity-data darktable filezilla-common pidgin-data gnumeric-common
    wesnoth-1.16-data gnome-control-center-data evince-common nautilus-data gnome-shell-common
  )
fi
mkdir -p "$out/debs"
cd "$out/debs"
for package in "${packages[@]}"; do
  if ! ls "${package}"_*.deb >/dev/null 2>&1; then
    apt-get download "$package"
  fi
  rm -rf "../$package"
  dpkg -x "${package}"_*.deb "../$package"
  echo "$package: $(find "../$package" \( -name '*.mo' -o -name '*.po' \) | wc -l) catalogs"
done
