// deploy/kubernetes rendered by kubectl's kustomize, as an operator applies it: the documents
// against the Kubernetes schemas, then what the platform needs of them (probes, security, the
// references between objects, routes, scaling), and the settings each role starts with through
// the program's own configuration check. Each check is also shown failing on a broken copy.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { missing, requireKubectl } from '../helpers/requirements.js';
import { copyDeployTree, find, generatedName, ofKind, render, schemaProblems, secretData, type Manifest } from './kubernetes-render.js';
import {
  environmentOf, ingressProblems, probeProblems, referenceProblems, roleProblems, ROLES, scalingProblems,
  securityProblems, serviceProblems,
} from './kubernetes-checks.js';

const OVERLAY = 'overlays/example';
const HOSTS = { api: 'api.city.example', data: 'data.city.example' };

describe('Kubernetes manifests', { skip: missing(requireKubectl()) }, () => {
  let tree: string;
  let base: Manifest[];
  let overlay: Manifest[];
  const secrets = {
    DATABASE_URL: 'postgres://platform:s3cret@postgres.city.example:5432/platform',
    SECRETS_KEY: randomBytes(32).toString('base64'),
    METRICS_TOKEN: randomBytes(32).toString('hex'),
  };

  before(() => {
    tree = copyDeployTree();
    const env = Object.entries(secrets).map(([key, value]) => `${key}=${value}\n`).join('');
    fs.writeFileSync(path.join(tree, OVERLAY, 'secrets.env'), env);
    base = render(path.join(tree, 'base'));
    overlay = render(path.join(tree, OVERLAY));
  });
  after(() => fs.rmSync(tree, { recursive: true, force: true }));

  test('the base and the example overlay render to documents valid against the Kubernetes 1.33 schemas', () => {
    const kinds = (manifests: Manifest[]) => manifests.map((m) => `${m.kind}/${generatedName(m.metadata.name)}`).sort();
    assert.deepEqual(kinds(base), [
      'ConfigMap/platform-config',
      'Deployment/api', 'Deployment/data-api', 'Deployment/worker',
      'HorizontalPodAutoscaler/api', 'HorizontalPodAutoscaler/data-api',
      'Ingress/api', 'Ingress/data-api',
      'PodDisruptionBudget/api', 'PodDisruptionBudget/data-api',
      'Service/api', 'Service/data-api', 'Service/data-api-mqtt',
    ]);
    assert.deepEqual(kinds(overlay), [...kinds(base), 'Namespace/platform', 'Secret/platform-secrets'].sort());
    assert.deepEqual(schemaProblems(base), []);
    assert.deepEqual(schemaProblems(overlay), []);
  });

  test('each role runs its mode; every container has its probes, its security settings and its resources', () => {
    for (const manifests of [base, overlay]) {
      assert.deepEqual(roleProblems(manifests), []);
      assert.deepEqual(probeProblems(manifests), []);
      assert.deepEqual(securityProblems(manifests), []);
    }
  });

  test('Services, the Ingresses, the autoscalers and the disruption budgets reach the right pods', () => {
    assert.deepEqual(serviceProblems(overlay), []);
    assert.deepEqual(ingressProblems(overlay, HOSTS), []);
    assert.deepEqual(scalingProblems(overlay), []);
  });

  test('the overlay: every Secret key and ConfigMap the pods name exists, one namespace, its image', () => {
    assert.deepEqual(referenceProblems(overlay), []);
    assert.deepEqual([...new Set(overlay.filter((m) => m.kind !== 'Namespace').map((m) => m.metadata.namespace))], ['platform']);
    const images = ofKind(overlay, 'Deployment').flatMap((d) => d['spec'].template.spec.containers.map((c: { image: string }) => c.image));
    assert.deepEqual([...new Set(images)], ['registry.city.example/city-data-platform:0.1.0']);
    assert.deepEqual(secretData(ofKind(overlay, 'Secret')[0]!), secrets);
  });

  test('each role starts with settings the program accepts, for production, naming the Ingress hosts', () => {
    for (const role of ROLES) {
      const config = loadConfig(environmentOf(overlay, role.name, secretData));
      assert.equal(config.production, true, role.name);
      assert.equal(config.idp.enabled, false, role.name);
      assert.equal(config.api.baseUrl, `https://${HOSTS.api}`, role.name);
      assert.equal(config.dataApi.baseUrl, `https://${HOSTS.data}`, role.name);
      assert.equal(config.oidc.issuer, 'https://login.city.example/realms/platform', role.name);
      assert.equal(config.api.port, 8080, role.name);
      assert.equal(config.dataApi.port, 8081, role.name);
      assert.equal(config.secrets.key?.toString('base64'), secrets.SECRETS_KEY, role.name);
    }
    assert.equal(environmentOf(overlay, 'data-api', secretData)['OWS_MAP_DIR'], '/run/ows');
  });

  test('secrets.env is required, and its example placeholders stop the program at start', () => {
    const copy = copyDeployTree();
    try {
      assert.throws(() => render(path.join(copy, OVERLAY)), /secrets\.env/);
      fs.copyFileSync(path.join(copy, OVERLAY, 'secrets.env.example'), path.join(copy, OVERLAY, 'secrets.env'));
      const rendered = render(path.join(copy, OVERLAY));
      assert.throws(() => loadConfig(environmentOf(rendered, 'api', secretData)), /SECRETS_KEY/);
    } finally {
      fs.rmSync(copy, { recursive: true, force: true });
    }
  });

  describe('the checks fail on a broken manifest', () => {
    /** A copy of the rendered overlay with one change. */
    const broken = (change: (manifests: Manifest[]) => void) => {
      const copy = structuredClone(overlay);
      change(copy);
      return copy;
    };
    const container = (manifests: Manifest[], name: string) => find(manifests, 'Deployment', name)['spec'].template.spec.containers[0];

    test('a wrong type or enumeration value fails the schema', () => {
      const problems = schemaProblems(broken((m) => {
        container(m, 'api').ports[0].containerPort = '8080';
        find(m, 'Ingress', 'data-api')['spec'].rules[0].http.paths[0].pathType = 'Exactly';
      }));
      assert.equal(problems.length, 2, problems.join('\n'));
      assert.match(problems[0]!, /^Deployment\/api: .*containerPort must be integer/);
      assert.match(problems[1]!, /^Ingress\/data-api: .*pathType must be equal to one of the allowed values/);
    });

    test('a probe on the wrong path or port, a root or writable container, missing limits', () => {
      const manifests = broken((m) => {
        container(m, 'api').readinessProbe.httpGet.path = '/health/live';
        container(m, 'worker').startupProbe.httpGet.port = 8081;
        delete find(m, 'Deployment', 'data-api')['spec'].template.spec.securityContext.runAsNonRoot;
        container(m, 'data-api').securityContext.readOnlyRootFilesystem = false;
        delete container(m, 'worker').resources.limits.memory;
        container(m, 'data-api').volumeMounts = container(m, 'data-api').volumeMounts.filter((mount: { name: string }) => mount.name !== 'ows');
      });
      assert.deepEqual(probeProblems(manifests), [
        'api/api: readinessProbe asks /health/live, expected /health/ready',
        'worker/worker: startupProbe on port 8081 (undefined), expected 8080',
      ]);
      assert.deepEqual(securityProblems(manifests), [
        'data-api: pod without runAsNonRoot',
        'data-api/data-api: root filesystem writable',
        'data-api/data-api: OWS_MAP_DIR /run/ows is not a writable emptyDir',
        'worker/worker: no memory limits',
      ]);
    });

    test('a Secret key nobody provides, /mqtt routed elsewhere, an autoscaler, a budget and Services aimed at the wrong pods', () => {
      const manifests = broken((m) => {
        container(m, 'worker').env.find((v: { name: string }) => v.name === 'SECRETS_KEY').valueFrom.secretKeyRef.key = 'SECRET_KEY';
        find(m, 'Ingress', 'data-api')['spec'].rules[0].http.paths[0].backend.service.name = 'api';
        find(m, 'HorizontalPodAutoscaler', 'data-api')['spec'].scaleTargetRef.name = 'data';
        find(m, 'PodDisruptionBudget', 'api')['spec'].selector.matchLabels['app.kubernetes.io/component'] = 'worker';
        find(m, 'Service', 'data-api-mqtt')['spec'].selector['app.kubernetes.io/component'] = 'api';
        find(m, 'Service', 'data-api')['spec'].ports[0].targetPort = 'mqtt';
      });
      assert.deepEqual(referenceProblems(manifests), ['worker/worker: SECRETS_KEY from missing key SECRET_KEY of Secret ' + ofKind(overlay, 'Secret')[0]!.metadata.name]);
      assert.deepEqual(ingressProblems(manifests, HOSTS), ['Ingress data-api sends /mqtt to api:http']);
      assert.deepEqual(scalingProblems(manifests), [
        'HPA data-api targets missing Deployment data',
        'Deployment api has no PodDisruptionBudget',
        'Deployment data-api has no autoscaler',
      ]);
      assert.deepEqual(serviceProblems(manifests), [
        'Service data-api port 8081 reaches container port 1884, expected 8081',
        'Service data-api-mqtt selects the pods of [api], expected data-api',
      ]);
    });
  });
});
