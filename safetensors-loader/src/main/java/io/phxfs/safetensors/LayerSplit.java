package io.phxfs.safetensors;

import java.util.List;
import java.util.Locale;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Pipeline placement ({@link WeightLoader.Builder#split}): consecutive layers spread over the
 * devices, each device a run of whole layers of about equal bytes.
 *
 * <p>A tensor's layer is the number after {@code layers.}, {@code layer.}, {@code h.},
 * {@code blocks.} or {@code block.} in its name ({@code model.layers.7.mlp...},
 * {@code transformer.h.7...}); the first such number counts. Layers are ordered by number and
 * cut into {@code N} runs at the points where the bytes before them cross {@code k/N} of all
 * layer bytes, so each device gets consecutive layers. A tensor of no layer goes to the first
 * device when its name contains {@code embed}, {@code wte} or {@code wpe} (the input side),
 * and to the last device otherwise (final norm, {@code lm_head}: the output side).
 */
final class LayerSplit {
    private static final Pattern LAYER = Pattern.compile("(?:^|\\.)(?:layers|layer|h|blocks|block)\\.(\\d{1,9})(?:\\.|$)");

    private LayerSplit() {
    }

    /** The layer number of a tensor name, or -1 when it belongs to no layer. */
    static int layerOf(String name) {
        Matcher m = LAYER.matcher(name);
        return m.find() ? Integer.parseInt(m.group(1)) : -1;
    }

    /** True for the names the rule sends to the first device. */
    static boolean inputSide(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        return n.contains("embed") || n.contains("wte") || n.contains("wpe");
    }

    /**
     * The placement of the selected tensors of {@code model} over {@code devices}; where
     * {@code override} answers a target other than {@link Placement#BY_LAYER}, that target.
     */
    static Placement of(ModelFiles model, TensorSelector selector, List<Integer> devices, Placement override) {
        // bytes per layer, over the selected tensors the override leaves to the rule
        TreeMap<Integer, Long> bytes = new TreeMap<>();
        long total = 0;
        for (SafetensorsHeader h : model.files()) {
            for (TensorInfo t : h.tensors()) {
                if (!selector.test(t.name()) || (override != null && override.targetOf(t) != Placement.BY_LAYER)) {
                    continue;
                }
                int layer = layerOf(t.name());
                if (layer >= 0) {
                    bytes.merge(layer, t.nbytes(), Long::sum);
                    total += t.nbytes();
                }
            }
        }
        int n = devices.size();
        TreeMap<Integer, Integer> deviceOfLayer = new TreeMap<>();
        long before = 0;
        int count = 0;
        for (var e : bytes.entrySet()) {
            // by the layer's middle byte, so a run boundary falls where most of a layer lies;
            // layers without bytes are spread by count
            double at = total > 0 ? (before + e.getValue() / 2.0) / total : (count + 0.5) / bytes.size();
            deviceOfLayer.put(e.getKey(), devices.get(Math.min(n - 1, (int) (at * n))));
            before += e.getValue();
            count++;
        }
        int first = devices.get(0);
        int last = devices.get(n - 1);
        return t -> {
            if (override != null) {
                int target = override.targetOf(t);
                if (target != Placement.BY_LAYER) {
                    return target;
                }
            }
            int layer = layerOf(t.name());
            if (layer >= 0) {
                return deviceOfLayer.get(layer);
            }
            return inputSide(t.name()) ? first : last;
        };
    }
}
