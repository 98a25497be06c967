import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { quote } from './mapfile.js';

/**
 * The folder MapServer reads: one sub-folder per map (its mapfile and GetFeatureInfo templates)
 * and the MapServer config file (`MAPSERVER_CONFIG_FILE`) whose `MAPS` block names every map by
 * its alias. Only aliases are accepted (`MS_MAP_NO_PATH`): a request cannot name a file.
 *
 * Each gateway process keeps its own folder, derived from the database: nothing on disk is shared
 * between processes, so any number of them can run side by side. Files are replaced by rename, so
 * a MapServer worker never reads a half-written mapfile.
 */
export class MapDirectory {
  private readonly aliases = new Map<string, string>();
  /** Writes run one after the other: two maps registered at once must not interleave the config file. */
  private writing: Promise<unknown> = Promise.resolve();

  private constructor(readonly root: string, private readonly temporary: boolean) {}

  /** `dir` is created when missing; without one, a fresh folder under the system's temp dir. */
  static async open(dir: string | null): Promise<MapDirectory> {
    const root = dir ? path.resolve(dir) : await mkdtemp(path.join(tmpdir(), 'ows-maps-'));
    await mkdir(root, { recursive: true });
    const directory = new MapDirectory(root, !dir);
    await directory.writeConfig();
    return directory;
  }

  get configFile(): string {
    return path.join(this.root, 'mapserver.conf');
  }

  /**
   * Writes (or replaces) a map's files and registers its alias. True when the alias is new: MapServer
   * reads its config file once per process, so its workers must be replaced to see it.
   */
  write(alias: string, mapfile: string, templates: Record<string, string>): Promise<boolean> {
    return this.inTurn(async () => {
      const folder = path.join(this.root, alias);
      await mkdir(folder, { recursive: true });
      for (const [name, content] of Object.entries(templates)) await replaceFile(path.join(folder, name), content);
      const mapPath = path.join(folder, 'map.map');
      await replaceFile(mapPath, mapfile);
      if (this.aliases.get(alias) === mapPath) return false;
      this.aliases.set(alias, mapPath);
      await this.writeConfig();
      return true;
    });
  }

  /** Unregisters a map and deletes its files (its dataset was unreleased). */
  remove(alias: string): Promise<void> {
    return this.inTurn(async () => {
      if (!this.aliases.delete(alias)) return;
      await this.writeConfig();
      await rm(path.join(this.root, alias), { recursive: true, force: true });
    });
  }

  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const turn = this.writing.then(work);
    this.writing = turn.catch(() => undefined);
    return turn;
  }

  /** Deletes a folder this process made for itself (OWS_MAP_DIR's is left: the operator chose it). */
  async dispose(): Promise<void> {
    await this.writing;
    if (this.temporary) await rm(this.root, { recursive: true, force: true });
  }

  registered(): string[] {
    return [...this.aliases.keys()];
  }

  private async writeConfig(): Promise<void> {
    const maps = [...this.aliases].map(([alias, file]) => `    ${alias} ${quote(file)}\n`).join('');
    await replaceFile(this.configFile, `CONFIG
  ENV
    MS_MAP_NO_PATH "1"
    MS_ERRORFILE "stderr"
  END
  MAPS
${maps}  END
END
`);
  }
}

async function replaceFile(file: string, content: string): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, content, { mode: 0o600 });
  await rename(temporary, file);
}
