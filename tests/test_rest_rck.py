"""Iceberg's REST compatibility kit (``RESTCompatibilityKitCatalogTests`` and
``RESTCompatibilityKitViewCatalogTests`` from ``org.apache.iceberg:iceberg-open-api:1.11.0:tests``,
built on Java's ``CatalogTests`` and ``ViewCatalogTests``) run against ``icefloe serve`` with
Iceberg Java's ``RESTCatalog`` as the client: every catalog and view test must pass (the ones
whose assumptions a SQL catalog does not meet, such as empty namespaces or dots in names, are
reported as aborted by JUnit)."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from support.rest import JAVA_REST_VERSION, RestServer, maven_classpath, new_warehouse

pytestmark = [pytest.mark.rest, pytest.mark.interop]

RCK_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
  <groupId>local</groupId><artifactId>rck</artifactId><version>1</version>
  <properties><ib>{version}</ib><jetty>12.1.8</jetty></properties>
  <dependencies>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-open-api</artifactId>
      <version>${{ib}}</version><classifier>test-fixtures</classifier></dependency>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-open-api</artifactId>
      <version>${{ib}}</version><classifier>tests</classifier></dependency>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-core</artifactId>
      <version>${{ib}}</version></dependency>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-core</artifactId>
      <version>${{ib}}</version><classifier>tests</classifier></dependency>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-api</artifactId>
      <version>${{ib}}</version><classifier>tests</classifier></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-api</artifactId>
      <version>3.4.3</version></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-runtime</artifactId>
      <version>3.4.3</version></dependency>
    <dependency><groupId>org.eclipse.jetty.ee10</groupId><artifactId>jetty-ee10-servlet</artifactId>
      <version>${{jetty}}</version></dependency>
    <dependency><groupId>org.eclipse.jetty.compression</groupId>
      <artifactId>jetty-compression-server</artifactId><version>${{jetty}}</version></dependency>
    <dependency><groupId>org.eclipse.jetty.compression</groupId>
      <artifactId>jetty-compression-gzip</artifactId><version>${{jetty}}</version></dependency>
    <dependency><groupId>org.xerial</groupId><artifactId>sqlite-jdbc</artifactId>
      <version>3.53.0.0</version></dependency>
    <dependency><groupId>org.apache.httpcomponents</groupId><artifactId>httpcore</artifactId>
      <version>4.4.16</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId>
      <version>2.0.17</version></dependency>
    <dependency><groupId>org.junit.platform</groupId>
      <artifactId>junit-platform-console-standalone</artifactId><version>1.12.2</version></dependency>
    <dependency><groupId>org.assertj</groupId><artifactId>assertj-core</artifactId>
      <version>3.27.3</version></dependency>
    <dependency><groupId>org.awaitility</groupId><artifactId>awaitility</artifactId>
      <version>4.3.0</version></dependency>
    <dependency><groupId>org.mockito</groupId><artifactId>mockito-core</artifactId>
      <version>5.17.0</version></dependency>
  </dependencies></project>
"""


@pytest.mark.parametrize(
    ("suite", "at_least"),
    [("RESTCompatibilityKitCatalogTests", 95), ("RESTCompatibilityKitViewCatalogTests", 50)],
)
def test_rest_compatibility_kit_passes(rest_server: RestServer, suite: str, at_least: int) -> None:
    try:
        _, classpath = maven_classpath(
            f"iceberg-rck-{JAVA_REST_VERSION}", RCK_POM.format(version=JAVA_REST_VERSION)
        )
    except RuntimeError as exc:
        pytest.skip(str(exc))
    env = {
        **os.environ,
        "CATALOG_URI": rest_server.url,
        "CATALOG_WAREHOUSE": new_warehouse(),  # an empty catalog of its own on the server
        "CATALOG_RCK_REQUIRES__NAMESPACE__CREATE": "true",
        "CATALOG_RCK_SUPPORTS__SERVERSIDE__RETRY": "true",
    }
    done = subprocess.run(
        [
            "java",
            "-Xmx512m",
            "-cp",
            classpath,
            "org.junit.platform.console.ConsoleLauncher",
            "execute",
            "--select-class",
            f"org.apache.iceberg.rest.{suite}",
            "--config",
            "rck.local=false",
            "--details=summary",
            "--disable-banner",
            "--disable-ansi-colors",
        ],
        env=env,
        capture_output=True,
        timeout=600,
    )
    out = done.stdout.decode(errors="replace")
    counts = {k: int(v) for v, k in re.findall(r"\[\s+(\d+) tests (\w+)\s+\]", out)}
    assert counts.get("failed") == 0, out[-6000:]
    assert counts.get("successful", 0) >= at_least, out[-3000:]
    assert done.returncode == 0, out[-3000:]
