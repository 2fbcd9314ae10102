#!/bin/sh
# Compiles the driver on first use (javac, into .build/ in this folder) against Debian's
# Curator and Jackson packages, then runs it. Needs libcurator-recipes-java and a JDK:
#   apt-get install libcurator-recipes-java default-jdk-headless
set -e
cd "$(dirname "$0")"
jars=/usr/share/java
cp=$jars/curator-recipes.jar:$jars/jackson-databind.jar:$jars/jackson-core.jar:$jars/jackson-annotations.jar:$jars/slf4j-simple.jar
for need in curator-recipes.jar jackson-databind.jar slf4j-simple.jar; do
    if [ ! -f "$jars/$need" ]; then
        echo "curator driver: $jars/$need is missing: apt-get install libcurator-recipes-java libslf4j-java" >&2
        exit 1
    fi
done
if ! command -v javac >/dev/null 2>&1; then
    echo "curator driver: no javac: apt-get install default-jdk-headless" >&2
    exit 1
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
# A small heap and one compiler thread: a JVM per driver process on a 2-core machine.
exec java -Xmx256m -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -cp ".build:$cp" Driver
