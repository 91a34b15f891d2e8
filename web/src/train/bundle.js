// A bundle from weights trained in the tab: the ONNX graph Thrust's Python exporter wrote for this env's
// policy (py/templates/<env>.onnx, placeholder weights) with the trained weights swapped into its
// initializers, parsed and re-encoded by protobufjs with onnx.proto; the manifest is the template's
// (the fields every export has) plus this run's training record and the new model's sha256.
import { sha256Hex } from "../policy.js";

const pyUrl = (path) => new URL(`../../py/${path}`, import.meta.url);

// onnx.ModelProto, parsed from the schema once per page.
const parsed = { modelProto: null };
async function onnxModelProto() {
  if (!parsed.modelProto) {
    // protobufjs (its UMD build sets globalThis.protobuf) loads with the first bundle built: a page that only plays never fetches it
    await import("../../node_modules/protobufjs/dist/protobuf.min.js");
    const schema = await (await fetch(pyUrl("onnx.proto"))).text();
    parsed.modelProto = globalThis.protobuf.parse(schema, { keepCase: true }).root.lookupType("onnx.ModelProto");
  }
  return parsed.modelProto;
}

export async function fetchTemplate(env) {
  const [model, description] = await Promise.all([
    fetch(pyUrl(`templates/${env}.onnx`)).then((r) => r.arrayBuffer()),
    fetch(pyUrl(`templates/${env}.json`)).then((r) => r.json()),
  ]);
  return { model: new Uint8Array(model), description };
}

// (in, out) row-major -> (out, in) row-major: torch's Linear layout, which the exporter's graph holds.
function transpose(values, [rows, cols]) {
  const out = new Float32Array(values.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = values[r * cols + c];
  return out;
}

// What the template's initializer `slot` holds, from the trained weights or the normaliser's statistics.
function initializerValues(slot, weights, normalizer) {
  if (slot.kind === "obs_mean") return normalizer.mean;
  if (slot.kind === "obs_std") return normalizer.std;
  const layer = weights[slot.layer];
  if (slot.kind === "bias") return layer.b;
  return slot.transpose ? transpose(layer.W, layer.shape) : layer.W;
}

// weights: per layer {W (in, out), b, shape: [in, out]} (ActorCritic.policyWeights()); normalizer: the run's
// observation {mean, std} (VecNormalizer.statistics()) when the template has a normaliser in front, else null;
// fields: manifest additions (training, config, command). Returns {manifest, model} as the player and
// `thrust eval` read them.
export async function buildBundle(template, weights, normalizer, fields) {
  const ModelProto = await onnxModelProto();
  const model = ModelProto.decode(template.model);
  const { initializers, sizes } = template.description;
  if (weights.length !== sizes.length - 1)
    throw new Error(`the template has ${sizes.length - 1} layers, the trained policy ${weights.length}`);
  if (template.description.normalized !== (normalizer !== null))
    throw new Error("the template and the trained policy disagree on observation normalisation");
  for (const tensor of model.graph.initializer) {
    const slot = initializers[tensor.name];
    if (!slot) continue;
    const values = initializerValues(slot, weights, normalizer);
    if (values.length !== tensor.dims.reduce((a, b) => a * Number(b), 1))
      throw new Error(`initializer ${tensor.name} holds ${tensor.dims} values, the trained layer ${values.length}`);
    tensor.raw_data = new Uint8Array(Float32Array.from(values).buffer); // little-endian float32, as ONNX stores raw data
    tensor.float_data = [];
  }
  const bytes = ModelProto.encode(model).finish();
  const manifest = { ...template.description.manifest, ...fields, sha256: await sha256Hex(bytes) };
  return { manifest, model: bytes };
}
