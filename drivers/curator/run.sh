#!/bin/sh
# Compiles the driver on first use (javac, into .build/ in this folder) against Debian's
# Curator and Jackson packages, then runs it. Needs libcurator-recipes-java and a JDK, installed
# here on first use when run as root with apt-get:
#   apt-get install libcurator-recipes-java libslf4j-java default-jdk-headless
# `run.sh --prepare` only installs and compiles (`.ci/run` does so beside the compile).
set -e
cd "$(dirname "$0")"
jars=/usr/share/java
cp=$jars/curator-recipes.jar:$jars/jackson-databind.jar:$jars/jackson-core.jar:$jars/jackson-annotations.jar:$jars/slf4j-simple.jar
missing() { # what of Curator, Jackson, SLF4J's simple binding and a JDK is not installed
    for jar in curator-recipes.jar jackson-databind.jar slf4j-simple.jar; do
        [ -f "$jars/$jar" ] || echo "$jar"
    done
    command -v javac >/dev/null 2>&1 || echo javac
}
packages="libcurator-recipes-java libslf4j-java default-jdk-headless"
if [ -n "$(missing)" ]; then
    # On first use, installed from Debian's packages where this user may (root, apt-get), one
    # installer at a time (flock); otherwise the driver stops and says what to install.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        (
            flock 9
            if [ -n "$(missing)" ]; then
                echo "curator driver: installing $packages" >&2
                DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                    $packages >&2 || {
                    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
                        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
                            --no-install-recommends $packages >&2
                }
            fi
        ) 9>.install.lock || true
    fi
    if [ -n "$(missing)" ]; then
        echo "curator driver: missing $(missing | tr '\n' ' ')- install: apt-get install $packages" >&2
        exit 1
    fi
fi
if [ ! -f .build/Driver.class ] || [ Driver.java -nt .build/Driver.class ]; then
    (
        flock 9
        if [ ! -f .build/Driver.class ] || [ Driver.java -nt .build/Driver.class ]; then
            mkdir -p .build
            javac -nowarn -cp "$cp" -d .build Driver.java >&2
        fi
    ) 9>.build.lock
fi
[ "${1:-}" != --prepare ] || exit 0
# A small heap and one compiler thread: a JVM per driver process on a 2-core machine.
exec java -Xmx256m -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -cp ".build:$cp" Driver
