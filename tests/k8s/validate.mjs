#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
/*
 * Check the Kubernetes manifests in packaging/kubernetes/.
 *
 *   npm ci --prefix tests/k8s                 # once: kubernetes-models and yaml, pinned
 *   node tests/k8s/validate.mjs [--ignis PATH] [--dir DIR]
 *
 * Every YAML document of every file is checked three ways:
 *
 *   1. against the Kubernetes OpenAPI schema of its apiVersion and kind, through the
 *      validate() of the matching kubernetes-models class (a kind it does not know fails);
 *   2. for fields the schema does not know. The schemas allow any extra property, so a
 *      typo such as `hostPid` would pass them, while `kubectl apply` (strict field
 *      validation, its default) refuses it. The validator reads each property its schema
 *      defines, so we hand it proxies that record those reads: a key never read is
 *      unknown. The self-checks at the end prove this still works with the installed
 *      kubernetes-models;
 *   3. for what no schema can say: the agent's capabilities, host PID namespace, probe and
 *      metrics port, downward-API variables, references between the manifests, and the
 *      ConfigMap's config.yaml, whose keys must be ignis settings (from
 *      `ignis --print-reference`, or the same table in README.md without a binary) and
 *      which `ignis --print-config` must accept.
 *
 * kustomization.yaml has no schema in kubernetes-models (it is kustomize's file, not an API
 * object): only its list of resources is checked, against the folder.
 *
 * One line per document, then mutated copies that must fail (the self-checks), then
 * "N passed, N failed". Exit status 0 only when nothing failed.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

/* Piped into `head`: stop quietly when the reader goes. */
process.stdout.on("error", (e) => process.exit(e.code === "EPIPE" ? 1 : 2));

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..", "..");

// ---- What the manifests must say (the reasons are in daemonset.yaml's comments) ----------

const NAMESPACE = "ignis";
const CAPABILITIES = ["BPF", "PERFMON", "SYS_RESOURCE", "SYS_PTRACE", "DAC_READ_SEARCH",
		      "CHECKPOINT_RESTORE", "SYSLOG"];
const CLUSTER_SCOPED = new Set(["Namespace", "ClusterRole", "ClusterRoleBinding"]);
const POD_RULE = { apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch"] };

// ---- Arguments -------------------------------------------------------------------------------

function parseArgs(argv) {
	const a = { dir: path.join(ROOT, "packaging", "kubernetes"), ignis: null };
	for (let i = 0; i < argv.length; i++) {
		const v = argv[i];
		if ((v === "--dir" || v === "--ignis") && i + 1 < argv.length) {
			a[v.slice(2)] = path.resolve(argv[++i]);
		} else if (v === "-h" || v === "--help") {
			console.log("usage: node tests/k8s/validate.mjs [--ignis PATH] [--dir DIR]");
			process.exit(0);
		} else {
			console.error(`validate.mjs: unknown argument ${v} (try --help)`);
			process.exit(2);
		}
	}
	if (!a.ignis && existsSync(path.join(ROOT, "build", "ignis")))
		a.ignis = path.join(ROOT, "build", "ignis");
	return a;
}

// ---- Dependencies: say how to install them rather than print a stack -----------------------

let YAML;
try {
	YAML = (await import("yaml")).default;
	await import("kubernetes-models/v1/Namespace");
} catch (e) {
	console.log(`FAIL setup: ${e.code || e.message}: run \`npm ci --prefix tests/k8s\` first`);
	console.log("0 passed, 1 failed");
	process.exit(1);
}
const KM_VERSION = JSON.parse(readFileSync(path.join(HERE, "node_modules", "kubernetes-models",
							 "package.json"), "utf8")).version;

// ---- The agent's settings: file keys, environment names, secret-only keys ------------------

/* Rows of the reference table ("| flag | environment | file key | default | meaning |"). */
function parseReference(text) {
	const keys = new Set(), env = new Set(), secret = new Set();
	let cols = null;
	for (const line of text.split("\n")) {
		if (!line.startsWith("|"))
			continue;
		const cells = line.split("|").slice(1, -1).map((c) => c.trim());
		if (!cols) {
			cols = { flag: cells.indexOf("flag"), env: cells.indexOf("environment"),
				 key: cells.indexOf("file key") };
			if (cols.key < 0)
				throw new Error("no 'file key' column in the reference table");
			continue;
		}
		if (/^-+$/.test(cells[0]))
			continue;
		const key = cells[cols.key].replace(/`/g, "");
		if (key)
			keys.add(key);
		for (const name of cells[cols.env].replace(/`/g, "").split(","))
			if (name.trim())
				env.add(name.trim());
		if (key && cells[cols.flag].includes("secret"))
			secret.add(key);
	}
	if (!keys.size)
		throw new Error("no settings found in the reference table");
	return { keys, env, secret };
}

function loadReference(args) {
	if (args.ignis) {
		if (!existsSync(args.ignis))
			throw new Error(`${args.ignis}: no such file`);
		const text = execFileSync(args.ignis, ["--print-reference"], { encoding: "utf8" });
		return { ...parseReference(text), source: `${path.relative(ROOT, args.ignis)} --print-reference` };
	}
	const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
	const m = readme.match(/<!-- config:start -->([\s\S]*?)<!-- config:end -->/);
	if (!m)
		throw new Error("README.md has no <!-- config:start --> table and build/ignis is missing");
	return { ...parseReference(m[1]), source: "README.md (no build/ignis: build it for a stricter check)" };
}

// ---- Files and documents ---------------------------------------------------------------------

function yamlFiles(dir) {
	const out = [];
	for (const name of readdirSync(dir).sort()) {
		const p = path.join(dir, name);
		if (statSync(p).isDirectory())
			out.push(...yamlFiles(p));
		else if (/\.ya?ml$/.test(name))
			out.push(p);
	}
	return out;
}

/* Kubernetes reads manifests as YAML 1.1 (yes/no/on/off are booleans there, strings in 1.2),
 * and refuses duplicate keys: parse the same way. */
function loadDocuments(dir) {
	const docs = [];
	for (const file of yamlFiles(dir)) {
		const parsed = YAML.parseAllDocuments(readFileSync(file, "utf8"),
						      { version: "1.1", uniqueKeys: true, prettyErrors: true });
		parsed.forEach((d, i) => {
			const name = `${path.relative(ROOT, file)}#${i + 1}`;
			const problems = [...d.errors, ...d.warnings].map((e) => e.message.split("\n")[0]);
			const obj = problems.length ? null : d.toJS();
			if (!problems.length && obj === null)
				return; /* an empty document (a trailing ---) */
			docs.push({ file, name, obj, parseErrors: problems });
		});
	}
	return docs;
}

// ---- 1 and 2: the schema, and fields it does not know ----------------------------------------

async function modelClass(apiVersion, kind) {
	if (typeof apiVersion !== "string" || typeof kind !== "string" ||
	    !/^([a-z0-9.-]+\/)?v[0-9a-z]+$/.test(apiVersion) || !/^[A-Z][A-Za-z0-9]*$/.test(kind))
		return null;
	try {
		const mod = await import(`kubernetes-models/${apiVersion}/${kind}`);
		const cls = mod[kind];
		return cls && cls.apiVersion === apiVersion && cls.kind === kind ? cls : null;
	} catch {
		return null;
	}
}

/* A proxy over obj (and, lazily, everything under it) that notes which property names the
 * validator asks each object for. */
function recorder(root) {
	const reads = new Map(); /* plain object -> Set of property names read */
	const proxies = new Map();
	const wrap = (v) => {
		if (v === null || typeof v !== "object")
			return v;
		if (proxies.has(v))
			return proxies.get(v);
		if (!Array.isArray(v))
			reads.set(v, new Set());
		const p = new Proxy(v, {
			get(target, prop, receiver) {
				if (typeof prop === "string" && !Array.isArray(target))
					reads.get(target).add(prop);
				const got = Reflect.get(target, prop, receiver);
				return typeof prop === "string" && Object.hasOwn(target, prop) ? wrap(got) : got;
			},
		});
		proxies.set(v, p);
		return p;
	};
	return { proxy: wrap(root), reads };
}

function unknownFields(obj, reads, at = "") {
	const out = [];
	if (Array.isArray(obj)) {
		obj.forEach((v, i) => out.push(...unknownFields(v, reads, `${at}[${i}]`)));
	} else if (obj !== null && typeof obj === "object") {
		const seen = reads.get(obj);
		for (const [k, v] of Object.entries(obj)) {
			const here = at ? `${at}.${k}` : k;
			if (!seen || !seen.has(k))
				out.push(`unknown field "${here}"`);
			else
				out.push(...unknownFields(v, reads, here));
		}
	}
	return out;
}

function schemaErrors(cls, obj) {
	try {
		new cls(obj).validate();
	} catch (e) {
		/* Unknown fields are found only on a document the schema accepts: a failed
		 * validation stops reading early, and what it did not read is not unknown. */
		return [`schema: ${e.message}`];
	}
	/* The class's validate() runs its compiled schema on `this`: call it on the recorder. */
	const copy = structuredClone(obj);
	const { proxy, reads } = recorder(copy);
	cls.prototype.validate.call(proxy);
	return unknownFields(copy, reads);
}

// ---- 3: what the schema cannot say ------------------------------------------------------------

const get = (o, ...keys) => keys.reduce((v, k) => (v == null ? undefined : v[k]), o);
const sameSet = (a, b) => a.length === b.length && [...a].sort().join() === [...b].sort().join();

/* Kubernetes quantities, enough for requests and limits: 20m, 64Mi, 1.5, 2G. */
function quantity(q) {
	const m = String(q).match(/^([0-9.]+)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/);
	if (!m)
		return NaN;
	const mult = { m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 2 ** 10, Mi: 2 ** 20,
		       Gi: 2 ** 30, Ti: 2 ** 40 }[m[2]] ?? 1;
	return Number(m[1]) * mult;
}

function under(p, dir) {
	const rel = path.posix.relative(dir, p);
	return rel === "" || (!rel.startsWith("..") && !path.posix.isAbsolute(rel));
}

function checkNamespaceOf(doc) {
	const kind = doc.obj.kind, ns = get(doc.obj, "metadata", "namespace");
	if (CLUSTER_SCOPED.has(kind))
		return ns === undefined ? [] : [`${kind} is cluster-scoped but names namespace ${ns}`];
	return ns === NAMESPACE ? [] : [`metadata.namespace is ${ns ?? "unset"}, not ${NAMESPACE}`];
}

function checkNamespace(o) {
	const errs = [];
	if (get(o, "metadata", "name") !== NAMESPACE)
		errs.push(`the Namespace is ${get(o, "metadata", "name")}, not ${NAMESPACE}`);
	if (get(o, "metadata", "labels", "pod-security.kubernetes.io/enforce") !== "privileged")
		errs.push("the Namespace lacks pod-security.kubernetes.io/enforce: privileged " +
			  "(baseline and restricted refuse hostPID, hostPath and the capabilities)");
	return errs;
}

function checkClusterRole(o) {
	const rules = o.rules || [];
	if (rules.length !== 1 || !sameSet(rules[0].apiGroups || [], POD_RULE.apiGroups) ||
	    !sameSet(rules[0].resources || [], POD_RULE.resources) ||
	    !sameSet(rules[0].verbs || [], POD_RULE.verbs) || rules[0].resourceNames)
		return [`rules must be exactly get/list/watch on pods of the core group, not ${JSON.stringify(rules)}`];
	return [];
}

function checkBinding(o, all) {
	const errs = [];
	const role = all.find((d) => d.kind === "ClusterRole" && d.metadata?.name === o.roleRef?.name);
	if (o.roleRef?.kind !== "ClusterRole" || !role)
		errs.push(`roleRef names ClusterRole ${o.roleRef?.name}, which is not in this folder`);
	const sa = (o.subjects || []).find((s) => s.kind === "ServiceAccount");
	if (!sa || !all.some((d) => d.kind === "ServiceAccount" && d.metadata?.name === sa.name &&
				  d.metadata?.namespace === sa.namespace))
		errs.push("subjects name no ServiceAccount of this folder (name and namespace)");
	return errs;
}

/* config.yaml: parse it as the agent would (libyaml reads YAML 1.1), check every key. */
function checkIgnisConfig(text, ref, ignis) {
	const errs = [];
	const doc = YAML.parseDocument(text, { version: "1.1", uniqueKeys: true });
	if (doc.errors.length)
		return [`config.yaml does not parse: ${doc.errors[0].message.split("\n")[0]}`];
	const cfg = doc.toJS();
	if (cfg === null || typeof cfg !== "object" || Array.isArray(cfg))
		return ["config.yaml is not a mapping of settings"];
	for (const [k, v] of Object.entries(cfg)) {
		if (!ref.keys.has(k))
			errs.push(`config.yaml: ${k} is not an ignis setting (see ignis --print-reference)`);
		else if (ref.secret.has(k))
			errs.push(`config.yaml: ${k} is a secret: give it through the environment from a Secret`);
		if (/password|passwd|secret|token/i.test(k) && !k.endsWith("_file") && !ref.secret.has(k))
			errs.push(`config.yaml: ${k} looks like a credential`);
		const scalar = (x) => x === null || ["string", "number", "boolean"].includes(typeof x);
		if (!scalar(v) && !(Array.isArray(v) && v.every(scalar)))
			errs.push(`config.yaml: ${k} must be a scalar or a list of scalars`);
	}
	/* Commented-out settings ("# server_url: ...") are what users will uncomment. A word
	 * with an underscore before a colon is taken for one; a plain word may be prose
	 * ("# Note: ..."), so only a known one is checked further. */
	text.split("\n").forEach((line, i) => {
		const m = line.match(/^\s*#\s*([a-z][a-z0-9]*(?:_[a-z0-9]+)*):(\s|$)/);
		if (!m || (!ref.keys.has(m[1]) && !m[1].includes("_")))
			return;
		if (!ref.keys.has(m[1]))
			errs.push(`config.yaml line ${i + 1}: commented-out ${m[1]} is not an ignis setting`);
		else if (ref.secret.has(m[1]))
			errs.push(`config.yaml line ${i + 1}: ${m[1]} is a secret, even commented out`);
	});
	if (/glc_[A-Za-z0-9+/=_-]{16,}/.test(text))
		errs.push("config.yaml holds what looks like a Grafana Cloud token");
	/* The agent itself, with a clean environment so that no IGNIS_* of ours leaks in. */
	if (ignis && !errs.length) {
		const dir = mkdtempSync(path.join(tmpdir(), "ignis-k8s-"));
		try {
			const file = path.join(dir, "config.yaml");
			writeFileSync(file, text);
			execFileSync(ignis, ["--config", file, "--print-config"],
				     { env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" }, stdio: ["ignore", "ignore", "pipe"] });
		} catch (e) {
			const why = String(e.stderr || e.message).split("\n")[0];
			errs.push(`ignis --print-config refuses config.yaml: ${why}`);
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	}
	return errs;
}

function checkConfigMap(o, ref, ignis) {
	const data = o.data || {};
	if (o.binaryData)
		return ["binaryData is not expected in the agent's ConfigMap"];
	if (!("config.yaml" in data))
		return ["no config.yaml key"];
	const errs = [];
	for (const k of Object.keys(data))
		if (/password|passwd|secret|token/i.test(k))
			errs.push(`data key ${k} looks like a credential: use a Secret`);
	return [...errs, ...checkIgnisConfig(data["config.yaml"], ref, ignis)];
}

function checkDaemonSet(o, all, ref) {
	const errs = [];
	const spec = get(o, "spec", "template", "spec") || {};
	const selector = get(o, "spec", "selector", "matchLabels") || {};
	const labels = get(o, "spec", "template", "metadata", "labels") || {};
	for (const [k, v] of Object.entries(selector))
		if (labels[k] !== v)
			errs.push(`the selector's ${k}=${v} does not match the pod template's labels`);
	if (spec.hostPID !== true)
		errs.push("spec.template.spec.hostPID must be true: the agent must see every process of its node");
	if (spec.hostNetwork === true)
		errs.push("hostNetwork is not needed: metrics are served on the pod's IP");
	const sa = spec.serviceAccountName;
	if (!all.some((d) => d.kind === "ServiceAccount" && d.metadata?.name === sa &&
			     d.metadata?.namespace === o.metadata?.namespace))
		errs.push(`serviceAccountName ${sa} is not a ServiceAccount of this folder`);
	if (!(spec.tolerations || []).some((t) => t.operator === "Exists" && !t.key && !t.effect))
		errs.push("no toleration with operator Exists alone: the agent must run on every node");
	const surge = get(o, "spec", "updateStrategy", "rollingUpdate", "maxSurge");
	if (surge !== undefined && surge !== 0 && surge !== "0%")
		errs.push("maxSurge must be 0: two agents on a node would contend for its spool");

	const containers = spec.containers || [];
	const c = containers.find((x) => x.name === "ignis") || containers[0];
	if (!c)
		return [...errs, "no container"];
	const sc = c.securityContext || {};
	const caps = sc.capabilities || {};
	if (!sameSet(caps.drop || [], ["ALL"]))
		errs.push(`capabilities.drop must be [ALL], not ${JSON.stringify(caps.drop)}`);
	const add = caps.add || [];
	if (!sameSet(add, CAPABILITIES)) {
		const missing = CAPABILITIES.filter((x) => !add.includes(x));
		const extra = add.filter((x) => !CAPABILITIES.includes(x));
		errs.push(`capabilities.add must be ${CAPABILITIES.join(",")}` +
			  (missing.length ? `; missing ${missing.join(",")}` : "") +
			  (extra.length ? `; unexpected ${extra.join(",")}` : ""));
	}
	/* The API server's own rules (pkg/apis/core/validation), which no schema carries. */
	if (sc.allowPrivilegeEscalation === false && sc.privileged === true)
		errs.push("allowPrivilegeEscalation: false with privileged: true is refused by the API server");
	if (sc.allowPrivilegeEscalation === false && add.some((x) => /^(CAP_)?SYS_ADMIN$/.test(x)))
		errs.push("allowPrivilegeEscalation: false with SYS_ADMIN added is refused by the API server");
	if (sc.runAsUser !== 0)
		errs.push("runAsUser must be 0: added capabilities are effective only for root");
	if (sc.readOnlyRootFilesystem !== true)
		errs.push("readOnlyRootFilesystem should be true");

	const env = c.env || [];
	const seen = new Map();
	env.forEach((e, i) => {
		if (seen.has(e.name))
			errs.push(`env ${e.name} is set twice`);
		seen.set(e.name, i);
		if (/^IGNIS_/.test(e.name) && !ref.env.has(e.name))
			errs.push(`env ${e.name} is not an ignis setting`);
		if (/PASSWORD|TOKEN|SECRET/.test(e.name) && e.value !== undefined)
			errs.push(`env ${e.name} has a literal value: take it from a Secret (secretKeyRef)`);
		/* $(VAR) expands only variables defined earlier in the list. */
		for (const m of String(e.value ?? "").matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g))
			if (!seen.has(m[1]) || seen.get(m[1]) >= i)
				errs.push(`env ${e.name} uses $(${m[1]}), which is not defined before it`);
	});
	const envOf = (n) => env.find((e) => e.name === n);
	if (get(envOf("NODE_NAME"), "valueFrom", "fieldRef", "fieldPath") !== "spec.nodeName")
		errs.push("env NODE_NAME must come from the downward API's spec.nodeName");
	if (get(envOf("POD_IP"), "valueFrom", "fieldRef", "fieldPath") !== "status.podIP")
		errs.push("env POD_IP must come from the downward API's status.podIP");
	const metrics = envOf("IGNIS_METRICS_ADDRESS")?.value;
	const metricsPort = Number(String(metrics ?? "").match(/:([0-9]+)$/)?.[1]);
	if (!metricsPort)
		errs.push("env IGNIS_METRICS_ADDRESS must be HOST:PORT");

	const ports = c.ports || [];
	const probe = get(c, "livenessProbe", "httpGet");
	if (!probe || probe.path !== "/healthz") {
		errs.push("the livenessProbe must be an httpGet of /healthz");
	} else {
		const p = typeof probe.port === "number" ? probe.port :
			ports.find((x) => x.name === probe.port)?.containerPort;
		if (p === undefined)
			errs.push(`the livenessProbe's port ${probe.port} names no container port`);
		else if (metricsPort && Number(p) !== metricsPort)
			errs.push(`the livenessProbe asks port ${p}, the agent serves ${metricsPort}`);
	}
	if (metricsPort && !ports.some((x) => Number(x.containerPort) === metricsPort))
		errs.push(`no containerPort ${metricsPort} (the metrics port) is declared`);

	const res = c.resources || {};
	for (const r of ["cpu", "memory"]) {
		const rq = get(res, "requests", r), lim = get(res, "limits", r);
		if (rq === undefined)
			errs.push(`no ${r} request`);
		if (rq !== undefined && lim !== undefined && !(quantity(rq) <= quantity(lim)))
			errs.push(`the ${r} request ${rq} exceeds the limit ${lim} (or does not parse)`);
	}

	/* Mounts: every one backed by a volume; the config file and the spool where the agent
	 * expects them. */
	const volumes = new Map((spec.volumes || []).map((v) => [v.name, v]));
	const mounts = c.volumeMounts || [];
	for (const m of mounts)
		if (!volumes.has(m.name))
			errs.push(`volumeMount ${m.name} has no volume`);
	const args = c.args || [];
	const ci = args.indexOf("--config");
	const configPath = ci >= 0 ? args[ci + 1] : envOf("IGNIS_CONFIG")?.value;
	let cfg = null;
	if (!configPath) {
		errs.push("the container is given no --config");
	} else {
		const m = mounts.find((x) => under(configPath, x.mountPath));
		const cmName = get(volumes.get(m?.name), "configMap", "name");
		const cm = all.find((d) => d.kind === "ConfigMap" && d.metadata?.name === cmName &&
				     d.metadata?.namespace === o.metadata?.namespace);
		const key = m && path.posix.relative(m.mountPath, configPath);
		if (!cm || !(key in (cm.data || {})))
			errs.push(`--config ${configPath} is not a key of a ConfigMap of this folder mounted there`);
		else
			cfg = YAML.parse(cm.data[key], { version: "1.1" });
	}
	const spool = cfg && cfg.spool_dir;
	if (spool && sc.readOnlyRootFilesystem &&
	    !mounts.some((x) => !x.readOnly && under(spool, x.mountPath)))
		errs.push(`spool_dir ${spool} is on the read-only root filesystem: mount a volume there`);
	return errs;
}

function checkKustomization(doc, docs, dir) {
	const o = doc.obj;
	if (!/^kustomize\.config\.k8s\.io\//.test(o.apiVersion || "") || o.kind !== "Kustomization")
		return ["a kustomization file must have apiVersion kustomize.config.k8s.io/* and kind Kustomization"];
	const errs = [];
	const listed = (o.resources || []).map((r) => path.resolve(path.dirname(doc.file), r));
	for (const r of listed)
		if (!existsSync(r))
			errs.push(`resources lists ${path.relative(dir, r)}, which does not exist`);
	const here = new Set(docs.filter((d) => !isKustomization(d)).map((d) => d.file));
	for (const f of here)
		if (!listed.includes(f))
			errs.push(`resources leaves out ${path.relative(dir, f)}`);
	return errs;
}

const isKustomization = (d) => /^kustomization\.ya?ml$/.test(path.basename(d.file));

// ---- One document ------------------------------------------------------------------------------

async function checkDocument(doc, docs, ctx) {
	if (doc.parseErrors.length)
		return { errs: doc.parseErrors.map((e) => `YAML: ${e}`) };
	const o = doc.obj;
	if (o === null || typeof o !== "object" || Array.isArray(o))
		return { errs: ["not a mapping"] };
	if (isKustomization(doc))
		return { errs: checkKustomization(doc, docs, ctx.dir), note: "no schema in kubernetes-models: resources list only" };
	const cls = await modelClass(o.apiVersion, o.kind);
	if (!cls)
		return { errs: [`unknown apiVersion/kind ${o.apiVersion}/${o.kind} (not in kubernetes-models ${KM_VERSION})`] };
	/* The schema first; the checks of meaning run even when it fails, to say everything
	 * at once, but defensively, since the shapes they expect may then be wrong. */
	const errs = schemaErrors(cls, o);
	const all = docs.filter((d) => d.obj && !d.parseErrors.length).map((d) => d.obj);
	try {
		errs.push(...checkNamespaceOf(doc));
		switch (o.kind) {
		case "Namespace": errs.push(...checkNamespace(o)); break;
		case "ClusterRole": errs.push(...checkClusterRole(o)); break;
		case "ClusterRoleBinding": errs.push(...checkBinding(o, all)); break;
		case "ConfigMap": errs.push(...checkConfigMap(o, ctx.ref, ctx.ignis)); break;
		case "DaemonSet": errs.push(...checkDaemonSet(o, all, ctx.ref)); break;
		case "Secret":
			if (Object.keys(o.data || {}).length || Object.keys(o.stringData || {}).length)
				errs.push("a Secret with values does not belong in the repository");
			break;
		}
	} catch (e) {
		errs.push(`checks of meaning stopped: ${e.message}`);
	}
	return { errs };
}

function label(doc) {
	const o = doc.obj || {};
	const name = o.metadata?.name ? ` ${o.metadata.namespace ? o.metadata.namespace + "/" : ""}${o.metadata.name}` : "";
	return `${doc.name} ${o.kind ?? "?"}${name}`;
}

// ---- Self-checks: broken copies that must fail -----------------------------------------------

function mutations(ctx) {
	const ds = (d) => d.obj?.kind === "DaemonSet";
	const cm = (d) => d.obj?.kind === "ConfigMap";
	const pod = (o) => o.spec.template.spec;
	const ctr = (o) => pod(o).containers[0];
	const envNamed = (o, n) => ctr(o).env.find((e) => e.name === n);
	const setConfig = (o, f) => { o.data["config.yaml"] = f(o.data["config.yaml"]); };
	return [
		{ what: "a typo'd field (hostPid)", pick: ds, expect: /unknown field "spec\.template\.spec\.hostPid"/,
		  apply: (o) => { pod(o).hostPid = pod(o).hostPID; delete pod(o).hostPID; } },
		{ what: "a typo'd nested field (capabilites)", pick: ds, expect: /unknown field ".*securityContext\.capabilites"/,
		  apply: (o) => { const s = ctr(o).securityContext; s.capabilites = s.capabilities; delete s.capabilities; } },
		{ what: "a port as a string", pick: ds, expect: /schema: .*containerPort must be integer/,
		  apply: (o) => { ctr(o).ports[0].containerPort = String(ctr(o).ports[0].containerPort); } },
		{ what: "a missing capability (SYSLOG)", pick: ds, expect: /missing SYSLOG/,
		  apply: (o) => { const c = ctr(o).securityContext.capabilities; c.add = c.add.filter((x) => x !== "SYSLOG"); } },
		{ what: "an extra capability (SYS_ADMIN)", pick: ds, expect: /unexpected SYS_ADMIN/,
		  apply: (o) => { ctr(o).securityContext.capabilities.add.push("SYS_ADMIN"); } },
		{ what: "NODE_NAME from metadata.name", pick: ds, expect: /NODE_NAME must come from/,
		  apply: (o) => { envNamed(o, "NODE_NAME").valueFrom.fieldRef.fieldPath = "metadata.name"; } },
		{ what: "the probe on another port", pick: ds, expect: /livenessProbe asks port 9401/,
		  apply: (o) => { ctr(o).livenessProbe.httpGet.port = 9401; } },
		{ what: "$(POD_IP) used before it is defined", pick: ds, expect: /uses \$\(POD_IP\)/,
		  apply: (o) => { const e = ctr(o).env; const i = e.findIndex((x) => x.name === "POD_IP"); e.push(e.splice(i, 1)[0]); } },
		{ what: "hostPID off", pick: ds, expect: /hostPID must be true/,
		  apply: (o) => { pod(o).hostPID = false; } },
		{ what: "an unknown ignis setting", pick: cm, expect: /spool_directory is not an ignis setting/,
		  apply: (o) => setConfig(o, (t) => t + "spool_directory: /tmp\n") },
		{ what: "a typo'd commented-out setting", pick: cm, expect: /commented-out sever_url is not/,
		  apply: (o) => setConfig(o, (t) => t + "# sever_url: https://example.net\n") },
		{ what: "a password in the ConfigMap", pick: cm, expect: /basic_auth_password is a secret/,
		  apply: (o) => setConfig(o, (t) => t + "basic_auth_password: hunter2\n") },
		...(ctx.ignis ? [{ what: "a value ignis refuses (pyroscope_api: grpc)", pick: cm,
				   expect: /ignis --print-config refuses config\.yaml: .*pyroscope_api/,
				   apply: (o) => setConfig(o, (t) => t + "pyroscope_api: grpc\n") }] : []),
		{ what: "an unknown kind", pick: ds, expect: /unknown apiVersion\/kind apps\/v1\/DeamonSet/,
		  apply: (o) => { o.kind = "DeamonSet"; } },
	];
}

/* Each mutation breaks a copy of a document that passed, and its check must then fail with
 * the expected reason. A document that fails by itself has already been counted: its
 * self-checks are left out, with a note. */
async function selfChecks(docs, ctx, report, failedDocs) {
	const skipped = new Set();
	for (const m of mutations(ctx)) {
		const target = docs.find(m.pick);
		if (!target) {
			report(false, `self-check: ${m.what}`, ["no document to mutate"]);
			continue;
		}
		if (failedDocs.has(target)) {
			skipped.add(target.name);
			continue;
		}
		const broken = { ...target, obj: structuredClone(target.obj) };
		m.apply(broken.obj);
		const set = docs.map((d) => (d === target ? broken : d));
		const { errs } = await checkDocument(broken, set, ctx);
		const caught = errs.some((e) => m.expect.test(e));
		report(caught, `self-check: ${m.what} is caught`,
		       caught ? [] : [`expected ${m.expect}, got ${errs.length ? errs.join("; ") : "no error"}`]);
	}
	for (const name of skipped)
		console.log(`note: self-checks on ${name} not run: it fails by itself`);
}

// ---- Main ------------------------------------------------------------------------------------

const args = parseArgs(process.argv.slice(2));
let passed = 0, failed = 0;
const report = (ok, what, errs, note) => {
	if (ok) {
		passed++;
		console.log(`PASS ${what}${note ? ` (${note})` : ""}`);
	} else {
		failed++;
		console.log(`FAIL ${what}`);
		for (const e of errs)
			console.log(`     ${e}`);
	}
};

let ref = null;
try {
	ref = loadReference(args);
	console.log(`kubernetes-models ${KM_VERSION}; ignis settings from ${ref.source}`);
} catch (e) {
	report(false, "ignis settings", [e.message]);
}
if (ref) {
	const docs = existsSync(args.dir) ? loadDocuments(args.dir) : [];
	if (!docs.length)
		report(false, `manifests in ${path.relative(ROOT, args.dir) || args.dir}`, ["no YAML documents found"]);
	const ctx = { ref, ignis: args.ignis, dir: args.dir };
	const failedDocs = new Set();
	for (const doc of docs) {
		const { errs, note } = await checkDocument(doc, docs, ctx);
		report(!errs.length, label(doc), errs, note);
		if (errs.length)
			failedDocs.add(doc);
	}
	if (docs.length)
		await selfChecks(docs, ctx, report, failedDocs);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
