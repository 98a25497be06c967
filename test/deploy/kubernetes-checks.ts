import { find, ofKind, type Manifest } from './kubernetes-render.js';

/**
 * What must hold in the rendered manifests beyond their schemas, each check answering the list of
 * problems it found (empty: none), so that a test can show a check failing on a broken copy.
 */

/** The roles: Deployment name, the program's mode, the port its health routes answer on. */
export const ROLES = [
  { name: 'api', mode: 'api', healthPort: 8080, background: 'off' },
  { name: 'data-api', mode: 'data-api', healthPort: 8081, background: 'off' },
  { name: 'worker', mode: 'worker', healthPort: 8080, background: undefined },
] as const;

/** Deployments that serve requests: each has a Service, a PodDisruptionBudget and an autoscaler. */
export const REQUEST_SERVING = ['api', 'data-api'];

// A part of a parsed manifest, untyped: schemaProblems() has checked its shape already.
type Fragment = Manifest['spec'];

const containersOf = (deployment: Manifest): Fragment[] => deployment['spec']?.template?.spec?.containers ?? [];

/** The container port a probe or Service names (by name or by number), or undefined. */
function containerPort(container: Fragment, port: string | number): number | undefined {
  const declared = (container.ports ?? []) as { name?: string; containerPort: number }[];
  const match = declared.find((candidate) => candidate.name === port || candidate.containerPort === port);
  return match?.containerPort;
}

export function roleProblems(manifests: Manifest[]): string[] {
  const problems: string[] = [];
  for (const role of ROLES) {
    const deployment = find(manifests, 'Deployment', role.name);
    const [container, ...others] = containersOf(deployment);
    if (!container || others.length > 0) { problems.push(`${role.name}: one container expected`); continue; }
    const command = [...(container.command ?? []), ...(container.args ?? [])].join(' ');
    if (command !== `node dist/server.js ${role.mode}`) problems.push(`${role.name}: runs "${command}"`);
    const background = (container.env ?? []).find((variable: { name: string }) => variable.name === 'BACKGROUND_WORK')?.value;
    if (background !== role.background) problems.push(`${role.name}: BACKGROUND_WORK is ${background}, expected ${role.background}`);
  }
  return problems;
}

export function probeProblems(manifests: Manifest[]): string[] {
  const problems: string[] = [];
  const expected = { startupProbe: '/health/live', livenessProbe: '/health/live', readinessProbe: '/health/ready' } as const;
  for (const role of ROLES) {
    for (const container of containersOf(find(manifests, 'Deployment', role.name))) {
      for (const [probe, path] of Object.entries(expected)) {
        const httpGet = container[probe]?.httpGet;
        if (!httpGet) { problems.push(`${role.name}/${container.name}: no ${probe} over HTTP`); continue; }
        if (httpGet.path !== path) problems.push(`${role.name}/${container.name}: ${probe} asks ${httpGet.path}, expected ${path}`);
        const port = containerPort(container, httpGet.port);
        if (port !== role.healthPort) problems.push(`${role.name}/${container.name}: ${probe} on port ${httpGet.port} (${port}), expected ${role.healthPort}`);
      }
    }
  }
  return problems;
}

export function securityProblems(manifests: Manifest[]): string[] {
  const problems: string[] = [];
  for (const deployment of ofKind(manifests, 'Deployment')) {
    const pod = deployment['spec'].template.spec;
    const name = deployment.metadata.name;
    if (pod.securityContext?.runAsNonRoot !== true) problems.push(`${name}: pod without runAsNonRoot`);
    if (pod.securityContext?.runAsUser !== 10001) problems.push(`${name}: pod does not run as uid 10001, the image's user`);
    if (pod.automountServiceAccountToken !== false) problems.push(`${name}: mounts a service account token it never uses`);
    const emptyDirs = new Set((pod.volumes ?? []).filter((volume: Fragment) => volume.emptyDir).map((volume: Fragment) => volume.name));
    for (const container of containersOf(deployment)) {
      const where = `${name}/${container.name}`;
      const context = container.securityContext ?? {};
      if (context.readOnlyRootFilesystem !== true) problems.push(`${where}: root filesystem writable`);
      if (context.allowPrivilegeEscalation !== false) problems.push(`${where}: privilege escalation allowed`);
      if (JSON.stringify(context.capabilities?.drop) !== '["ALL"]') problems.push(`${where}: capabilities not all dropped`);
      for (const kind of ['requests', 'limits']) {
        for (const resource of ['cpu', 'memory']) {
          if (container.resources?.[kind]?.[resource] === undefined) problems.push(`${where}: no ${resource} ${kind}`);
        }
      }
      const writable = (container.volumeMounts ?? []).filter((mount: Fragment) => emptyDirs.has(mount.name)).map((mount: Fragment) => mount.mountPath);
      if (!writable.includes('/tmp')) problems.push(`${where}: /tmp is not a writable emptyDir`);
      const mapDir = (container.env ?? []).find((variable: Fragment) => variable.name === 'OWS_MAP_DIR')?.value;
      if (mapDir !== undefined && !writable.includes(mapDir)) problems.push(`${where}: OWS_MAP_DIR ${mapDir} is not a writable emptyDir`);
    }
  }
  return problems;
}

/** Every Secret key and ConfigMap the Deployments name exists (generated names carry a hash). */
export function referenceProblems(manifests: Manifest[]): string[] {
  const problems: string[] = [];
  const secrets = new Map(ofKind(manifests, 'Secret').map((secret) => [secret.metadata.name, Object.keys(secret['data'] ?? {})]));
  const configMaps = new Set(ofKind(manifests, 'ConfigMap').map((configMap) => configMap.metadata.name));
  for (const deployment of ofKind(manifests, 'Deployment')) {
    for (const container of containersOf(deployment)) {
      const where = `${deployment.metadata.name}/${container.name}`;
      for (const variable of container.env ?? []) {
        const ref = variable.valueFrom?.secretKeyRef;
        if (!ref) continue;
        if (!secrets.has(ref.name)) problems.push(`${where}: ${variable.name} from missing Secret ${ref.name}`);
        else if (!secrets.get(ref.name)!.includes(ref.key)) problems.push(`${where}: ${variable.name} from missing key ${ref.key} of Secret ${ref.name}`);
      }
      for (const source of container.envFrom ?? []) {
        if (source.configMapRef && !configMaps.has(source.configMapRef.name)) problems.push(`${where}: missing ConfigMap ${source.configMapRef.name}`);
        if (source.secretRef && !secrets.has(source.secretRef.name)) problems.push(`${where}: missing Secret ${source.secretRef.name}`);
      }
    }
  }
  return problems;
}

const selects = (selector: Record<string, string> | undefined, labels: Record<string, string>) =>
  selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([key, value]) => labels[key] === value);

/** The Deployments whose pods a label selector picks. */
function selectedDeployments(manifests: Manifest[], selector: Record<string, string> | undefined): string[] {
  return ofKind(manifests, 'Deployment')
    .filter((deployment) => selects(selector, deployment['spec'].template.metadata?.labels ?? {}))
    .map((deployment) => deployment.metadata.name);
}

export function serviceProblems(manifests: Manifest[]): string[] {
  const problems: string[] = [];
  const expected = [
    { service: 'api', deployment: 'api', port: 8080, type: 'ClusterIP' },
    { service: 'data-api', deployment: 'data-api', port: 8081, type: 'ClusterIP' },
    { service: 'data-api-mqtt', deployment: 'data-api', port: 1884, type: 'LoadBalancer' },
  ];
  for (const { service: name, deployment, port, type } of expected) {
    const service = find(manifests, 'Service', name);
    const picked = selectedDeployments(manifests, service['spec'].selector);
    if (picked.join() !== deployment) problems.push(`Service ${name} selects the pods of [${picked.join(', ')}], expected ${deployment}`);
    if (service['spec'].type !== type) problems.push(`Service ${name} is ${service['spec'].type}, expected ${type}`);
    const container = containersOf(find(manifests, 'Deployment', deployment))[0];
    for (const servicePort of service['spec'].ports ?? []) {
      const target = containerPort(container, servicePort.targetPort ?? servicePort.port);
      if (target !== port || servicePort.port !== port) problems.push(`Service ${name} port ${servicePort.port} reaches container port ${target}, expected ${port}`);
    }
  }
  return problems;
}

/** Where an Ingress sends a host and path: `service:port`, the port named or numbered. */
function route(ingress: Manifest, path: string): string | undefined {
  const match = ingress['spec'].rules.flatMap((rule: Fragment) => rule.http.paths).find((candidate: Fragment) => candidate.path === path);
  if (!match) return undefined;
  const { name, port } = match.backend.service;
  return `${name}:${port.name ?? port.number}`;
}

export function ingressProblems(manifests: Manifest[], hosts: { api: string; data: string }): string[] {
  const problems: string[] = [];
  const api = find(manifests, 'Ingress', 'api');
  const data = find(manifests, 'Ingress', 'data-api');
  const hostOf = (ingress: Manifest) => ingress['spec'].rules.map((rule: Fragment) => rule.host).join();
  if (hostOf(api) !== hosts.api) problems.push(`Ingress api serves ${hostOf(api)}, expected ${hosts.api}`);
  if (hostOf(data) !== hosts.data) problems.push(`Ingress data-api serves ${hostOf(data)}, expected ${hosts.data}`);
  for (const ingress of [api, data]) {
    const tlsHosts = (ingress['spec'].tls ?? []).flatMap((tls: Fragment) => tls.hosts).join();
    if (tlsHosts !== hostOf(ingress)) problems.push(`Ingress ${ingress.metadata.name}: TLS for ${tlsHosts}, rules for ${hostOf(ingress)}`);
  }
  if (route(api, '/') !== 'api:http') problems.push(`Ingress api sends / to ${route(api, '/')}`);
  if (route(data, '/mqtt') !== 'data-api:http') problems.push(`Ingress data-api sends /mqtt to ${route(data, '/mqtt')}`);
  if (route(data, '/') !== 'data-api:http') problems.push(`Ingress data-api sends / to ${route(data, '/')}`);
  const annotations = data.metadata.annotations ?? {};
  if (annotations['nginx.ingress.kubernetes.io/proxy-body-size'] !== '32m') problems.push('Ingress data-api: body size is not 32m');
  const readTimeout = Number(annotations['nginx.ingress.kubernetes.io/proxy-read-timeout']);
  if (!(readTimeout >= 600)) problems.push(`Ingress data-api: proxy-read-timeout ${readTimeout} would cut idle MQTT WebSocket connections`);
  return problems;
}

export function scalingProblems(manifests: Manifest[]): string[] {
  const problems: string[] = [];
  const deployments = new Set(ofKind(manifests, 'Deployment').map((deployment) => deployment.metadata.name));
  const autoscaled = ofKind(manifests, 'HorizontalPodAutoscaler').map((hpa) => {
    const target = hpa['spec'].scaleTargetRef;
    if (target.kind !== 'Deployment' || !deployments.has(target.name)) problems.push(`HPA ${hpa.metadata.name} targets missing ${target.kind} ${target.name}`);
    if (!(hpa['spec'].minReplicas >= 2)) problems.push(`HPA ${hpa.metadata.name}: minReplicas ${hpa['spec'].minReplicas} leaves a single pod`);
    const cpu = (hpa['spec'].metrics ?? []).find((metric: Fragment) => metric.resource?.name === 'cpu');
    if (!cpu) problems.push(`HPA ${hpa.metadata.name} does not scale on CPU`);
    return target.name as string;
  });
  const budgeted = ofKind(manifests, 'PodDisruptionBudget').flatMap((pdb) => {
    const picked = selectedDeployments(manifests, pdb['spec'].selector?.matchLabels);
    if (picked.length !== 1) problems.push(`PDB ${pdb.metadata.name} selects the pods of [${picked.join(', ')}], expected one Deployment`);
    return picked;
  });
  for (const name of REQUEST_SERVING) {
    if (!autoscaled.includes(name)) problems.push(`Deployment ${name} has no autoscaler`);
    if (!budgeted.includes(name)) problems.push(`Deployment ${name} has no PodDisruptionBudget`);
    // A fixed count would be reset on every apply, undoing the autoscaler's.
    if (find(manifests, 'Deployment', name)['spec'].replicas !== undefined) problems.push(`Deployment ${name} fixes replicas under an autoscaler`);
  }
  return problems;
}

/** The environment a role's container starts with: its ConfigMaps and Secrets resolved. */
export function environmentOf(manifests: Manifest[], role: string, secretValues: (secret: Manifest) => Record<string, string>): Record<string, string> {
  const container = containersOf(find(manifests, 'Deployment', role))[0];
  const byName = (kind: string, name: string) => ofKind(manifests, kind).find((object) => object.metadata.name === name)!;
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    if (source.configMapRef) Object.assign(env, byName('ConfigMap', source.configMapRef.name)['data']);
  }
  for (const variable of container.env ?? []) {
    const ref = variable.valueFrom?.secretKeyRef;
    env[variable.name] = ref ? secretValues(byName('Secret', ref.name))[ref.key]! : variable.value;
  }
  return env;
}

