import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1/Ingress';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { locateKubectl } from '../helpers/requirements.js';
import { REPOSITORY } from '../helpers/repository.js';

/**
 * Renders deploy/kubernetes with `kubectl kustomize` (offline) and checks documents against the
 * schemas of kubernetes-models, which are generated from the OpenAPI document of Kubernetes 1.33
 * (kubernetes-models 4.5.x): types, required fields and enumerations. Those schemas accept fields
 * they do not know, so a misspelt optional field passes them; the checks in kubernetes-checks.ts
 * look for the fields that matter by name.
 */

export type Manifest = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> }; [field: string]: any };

export { REPOSITORY };
export const DEPLOY_TREE = path.join(REPOSITORY, 'deploy/kubernetes');

/** A throw-away copy of deploy/kubernetes, so that a test can add secrets.env or break a file. */
export function copyDeployTree(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'k8s-manifests-'));
  fs.cpSync(DEPLOY_TREE, root, { recursive: true, filter: (source) => path.basename(source) !== 'secrets.env' });
  return root;
}

/** `kubectl kustomize dir`, parsed; throws with kubectl's stderr when it refuses. */
export function render(dir: string): Manifest[] {
  let output: string;
  try {
    output = execFileSync(locateKubectl()!, ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? '');
    throw new Error(`kubectl kustomize ${dir} failed: ${stderr.trim() || (error as Error).message}`);
  }
  return parseAllDocuments(output).map((document) => {
    if (document.errors.length > 0) throw new Error(`kubectl kustomize printed invalid YAML: ${document.errors[0]!.message}`);
    return document.toJS() as Manifest;
  }).filter((manifest) => manifest !== null);
}

const MODELS = new Map<string, { new (data: never): { validate(): void } }>([
  ['v1/ConfigMap', ConfigMap],
  ['v1/Namespace', Namespace],
  ['v1/Secret', Secret],
  ['v1/Service', Service],
  ['apps/v1/Deployment', Deployment],
  ['autoscaling/v2/HorizontalPodAutoscaler', HorizontalPodAutoscaler],
  ['networking.k8s.io/v1/Ingress', Ingress],
  ['policy/v1/PodDisruptionBudget', PodDisruptionBudget],
] as never);

/** What the schema of its apiVersion and kind says is wrong with each document, one line each. */
export function schemaProblems(manifests: Manifest[]): string[] {
  return manifests.flatMap((manifest) => {
    const name = `${manifest.kind}/${manifest.metadata?.name}`;
    const Model = MODELS.get(`${manifest.apiVersion}/${manifest.kind}`);
    if (!Model) return [`${name}: no schema known for ${manifest.apiVersion} ${manifest.kind}`];
    try {
      new Model(withUnfoldedSecretData(manifest) as never).validate();
      return [];
    } catch (error) {
      return [`${name}: ${(error as Error).message}`];
    }
  });
}

/**
 * Kustomize folds long base64 values of a Secret over several lines; the API server's decoder
 * skips line breaks (Go's base64), but the schema's "byte" format does not, so they are joined first.
 */
function withUnfoldedSecretData(manifest: Manifest): Manifest {
  if (manifest.kind !== 'Secret' || !manifest['data']) return manifest;
  const data = Object.fromEntries(Object.entries(manifest['data'] as Record<string, string>).map(([key, value]) => [key, value.replace(/\s+/g, '')]));
  return { ...manifest, data };
}

/** The one document of that kind and name; throws naming what is there instead. */
export function find(manifests: Manifest[], kind: string, name: string): Manifest {
  const matches = manifests.filter((manifest) => manifest.kind === kind && manifest.metadata.name === name);
  if (matches.length !== 1) {
    throw new Error(`${matches.length} ${kind} named ${name}; there are ${manifests.map((m) => `${m.kind}/${m.metadata.name}`).join(', ')}`);
  }
  return matches[0]!;
}

export const ofKind = (manifests: Manifest[], kind: string) => manifests.filter((manifest) => manifest.kind === kind);

/** A generated object's name without kustomize's content hash (`platform-config-5f7bk27tk`). */
export const generatedName = (name: string) => name.replace(/-[a-z0-9]{10}$/, '');

/** The data of a Secret as text (kubectl may fold long base64 values over several lines). */
export function secretData(secret: Manifest): Record<string, string> {
  return Object.fromEntries(Object.entries((secret['data'] ?? {}) as Record<string, string>)
    .map(([key, value]) => [key, Buffer.from(value.replace(/\s+/g, ''), 'base64').toString('utf8')]));
}
