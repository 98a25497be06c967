"""QGIS (headless) draws a WMS layer the way a desktop user's "Zoom to layer" does: the map's
extent is the layer's extent as QGIS read it from the capabilities, in EPSG:4326 and, on a
Web Mercator project, that extent transformed to EPSG:3857. Each drawing is saved as a PNG.

Argument: a JSON object {"url", "layer", "size": pixels, "outputs": {"EPSG:4326": path, "EPSG:3857": path}}.
Prints one JSON object {"valid", "error", "extent", "drawn": {crs: bool}}."""
import json
import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from qgis.core import (QgsApplication, QgsCoordinateReferenceSystem, QgsCoordinateTransform,  # noqa: E402
                       QgsMapRendererSequentialJob, QgsMapSettings, QgsProject, QgsRasterLayer)
from qgis.PyQt.QtCore import QSize  # noqa: E402
from qgis.PyQt.QtGui import QColor  # noqa: E402

args = json.loads(sys.argv[1])
QgsApplication.setPrefixPath("/usr", True)
app = QgsApplication([], False)
app.initQgis()

layer = QgsRasterLayer(f"crs=EPSG:4326&format=image/png&layers={args['layer']}&styles=&url={args['url']}", "map", "wms")
out = {"valid": layer.isValid(), "error": None if layer.isValid() else layer.error().summary(), "drawn": {}}
if layer.isValid():
    extent = layer.extent()
    out["extent"] = [extent.xMinimum(), extent.yMinimum(), extent.xMaximum(), extent.yMaximum()]
    source = QgsCoordinateReferenceSystem("EPSG:4326")
    for crs, path in args["outputs"].items():
        destination = QgsCoordinateReferenceSystem(crs)
        settings = QgsMapSettings()
        settings.setLayers([layer])
        settings.setDestinationCrs(destination)
        settings.setExtent(QgsCoordinateTransform(source, destination, QgsProject.instance()).transformBoundingBox(extent))
        settings.setOutputSize(QSize(args["size"], args["size"]))
        settings.setBackgroundColor(QColor(255, 255, 255, 255))
        job = QgsMapRendererSequentialJob(settings)
        job.start()
        job.waitForFinished()
        out["drawn"][crs] = job.renderedImage().save(path, "PNG")
print(json.dumps(out), flush=True)
os._exit(0)
