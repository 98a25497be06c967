import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A map with one red point layer `pts`, drawn without a database: enough for tests of the pool itself. */
export const ONE_POINT_MAPFILE = `MAP
  NAME "m"
  EXTENT -180 -90 180 90
  SIZE 64 64
  PROJECTION "init=epsg:4326" END
  WEB
    METADATA
      "ows_enable_request" "*"
      "ows_onlineresource" "http://example/ows?"
      "ows_title" "m"
      "ows_srs" "EPSG:4326"
    END
  END
  LAYER
    NAME "pts"
    TYPE POINT
    STATUS ON
    PROJECTION "init=epsg:4326" END
    METADATA "ows_title" "pts" END
    FEATURE POINTS 10 50 END END
    CLASS STYLE COLOR 255 0 0 SIZE 8 END END
  END
END
`;

/**
 * A fresh folder holding that map as `m.map` and a MapServer config file registering it under the
 * alias `M` (MapServer 8 serves nothing without one); the caller removes the folder.
 */
export function onePointMapFolder(prefix: string): { dir: string; configFile: string } {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  fs.writeFileSync(path.join(dir, 'm.map'), ONE_POINT_MAPFILE);
  const configFile = path.join(dir, 'mapserver.conf');
  fs.writeFileSync(configFile, `CONFIG\n  ENV\n    MS_MAP_PATTERN "^${dir}/"\n  END\n  MAPS\n    M "${dir}/m.map"\n  END\nEND\n`);
  return { dir, configFile };
}
