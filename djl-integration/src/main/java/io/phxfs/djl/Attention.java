package io.phxfs.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Scaled dot-product attention with grouped heads (each key head serves {@code Hq / Hkv} query
 * heads, Hugging Face's repeat_kv order), over a sequence's own keys and, where its cache
 * continues a shared {@link KvPrefix}, over the prefix's keys too. A prefix's scores and its
 * part of the output are products over the prefix arrays themselves (never a copy of them
 * joined to the sequence's keys); the softmax runs over both parts' scores side by side, so the
 * weights are those of one attention over all positions. How the products become scores, and a
 * sliding window, are the layer's {@link AttentionKind}: a window is a mask over the positions
 * that fall out of it (the cache keeps every position; the window only hides the old ones).
 */
final class Attention {
    private Attention() {
    }

    /**
     * Which keys a prefill piece's queries see: 0 where visible, -inf where not, over the shared
     * prefix's positions and over the cache's own.
     *
     * @param prefix {@code [T, P]}, or null where every query sees the whole prefix (or there is none)
     * @param own {@code [T, S]} over the own positions, the piece's included
     * @param prefixHidden no query sees any of the prefix (every window starts past it)
     */
    record Mask(NDArray prefix, NDArray own, boolean prefixHidden) {
    }

    /**
     * The mask of a prefill piece of {@code tokens} positions after {@code past} (of which
     * {@code prefix} are a shared prefix's), under {@code kind}'s window: causal, and a query at
     * position p sees no key before {@code p - window + 1}.
     *
     * @param m the manager to create it in
     * @param tokens T
     * @param past positions before the piece, the prefix's included
     * @param prefix the shared prefix's positions (0 without one)
     * @param kind the layers' attention (its window)
     * @return the mask
     */
    static Mask mask(NDManager m, int tokens, int past, int prefix, AttentionKind kind) {
        int s = past - prefix + tokens;
        float[] own = new float[tokens * s];
        for (int i = 0; i < tokens; i++) {
            int position = past + i;
            // own index j holds position prefix + j: hidden before the window and after the query
            int first = Math.max(0, kind.firstVisible(position) - prefix);
            Arrays.fill(own, i * s, i * s + Math.min(first, s), Float.NEGATIVE_INFINITY);
            Arrays.fill(own, i * s + position - prefix + 1, (i + 1) * s, Float.NEGATIVE_INFINITY);
        }
        NDArray prefixMask = null;
        boolean hidden = prefix > 0 && kind.firstVisible(past) >= prefix;
        if (prefix > 0 && !hidden && kind.firstVisible(past + tokens - 1) > 0) {
            float[] pm = new float[tokens * prefix];
            for (int i = 0; i < tokens; i++) {
                Arrays.fill(pm, i * prefix, i * prefix + Math.min(prefix, kind.firstVisible(past + i)), Float.NEGATIVE_INFINITY);
            }
            prefixMask = m.create(pm, new Shape(tokens, prefix));
        }
        return new Mask(prefixMask, m.create(own, new Shape(tokens, s)), hidden);
    }

    /**
     * {@code q [Hq, T, d]} over {@code k, v [Hkv, S, d]}.
     *
     * @param mask {@code [T, S]}: 0 where visible, -inf where not
     * @param kind how the products become scores
     * @return {@code [Hq, T, d]}
     */
    static NDArray full(NDArray q, NDArray k, NDArray v, NDArray mask, AttentionKind kind, DataType dt) {
        long hq = q.getShape().get(0);
        long t = q.getShape().get(1);
        long d = q.getShape().get(2);
        long hkv = k.getShape().get(0);
        NDArray qg = q.reshape(hkv, hq / hkv, t, d);
        NDArray scores = kind.scores(qg.matMul(k.expandDims(1).transpose(0, 1, 3, 2)), d).add(mask);
        return Precision.softmax(scores, dt).matMul(v.expandDims(1)).reshape(hq, t, d);
    }

    /**
     * A prefill piece's attention: {@code q [Hq, T, d]} and its new {@code k, v [Hkv, T, d]},
     * appended to {@code cache} at {@code layer}, over everything the cache holds before them
     * and themselves (causally).
     *
     * @param mask {@link #mask} of the piece for the layer's kind: the same for every layer of a
     *        kind, so made once per forward
     * @param kind how the products become scores
     * @return {@code [Hq, T, d]}
     */
    static NDArray cached(NDArray q, NDArray k, NDArray v, KvCache cache, int layer, DataType dt, Mask mask,
                          AttentionKind kind) {
        int tokens = (int) q.getShape().get(1);
        NDArray[] kv = cache.append(layer, k, v);
        KvPrefix prefix = cache.prefix();
        if (prefix == null || mask.prefixHidden()) {
            return full(q, kv[0], kv[1], mask.own(), kind, dt);
        }
        // the prefix precedes every new position: only a window hides any of it
        long hq = q.getShape().get(0);
        long d = q.getShape().get(2);
        long hkv = k.getShape().get(0);
        int shared = prefix.length();
        NDArray qg = q.reshape(hkv, hq / hkv, tokens, d);
        NDArray sPrefix = kind.scores(qg.matMul(prefix.key(layer).expandDims(1).transpose(0, 1, 3, 2)), d);
        if (mask.prefix() != null) {
            sPrefix = sPrefix.add(mask.prefix());
        }
        NDArray sOwn = kind.scores(qg.matMul(kv[0].expandDims(1).transpose(0, 1, 3, 2)), d).add(mask.own());
        NDList w = Precision.softmax(Precision.to(sPrefix, DataType.FLOAT32).concat(sOwn, 3), dt).split(new long[] {shared}, 3);
        NDArray out = sum(w.get(0).matMul(prefix.value(layer).expandDims(1)), w.get(1).matMul(kv[1].expandDims(1)), dt);
        return out.reshape(hq, tokens, d);
    }

    /**
     * A decode step's masks over a shared prefix's positions that fall before a row's window,
     * made once per step for all the layers of the step (each {@code [P]}: -inf before the
     * window's first position, 0 from it), in the manager and dtype of the step.
     */
    static final class PrefixMasks {
        private final NDManager manager;
        private final DataType dtype;
        private final Map<Long, NDArray> made = new java.util.HashMap<>();

        PrefixMasks(NDManager manager, DataType dtype) {
            this.manager = manager;
            this.dtype = dtype;
        }

        NDArray hiding(int prefix, int first) {
            return made.computeIfAbsent(((long) prefix << 32) | first, key -> {
                float[] hide = new float[prefix];
                Arrays.fill(hide, 0, Math.min(first, prefix), Float.NEGATIVE_INFINITY);
                return Precision.to(manager.create(hide), dtype);
            });
        }
    }

    /**
     * The prefix's and the own positions' parts of an output added in float32 and rounded once
     * to {@code dt}: in bf16 a rounded sum of two rounded parts would differ from one product
     * over all positions by more than that product's own rounding.
     */
    private static NDArray sum(NDArray a, NDArray b, DataType dt) {
        if (dt == DataType.FLOAT32) {
            return a.add(b);
        }
        return Precision.to(Precision.to(a, DataType.FLOAT32).add(Precision.to(b, DataType.FLOAT32)), dt);
    }

    /**
     * One decode step's attention, one new position per sequence: {@code q [B, Hq, d]} and the
     * new {@code k, v [B, Hkv, d]}, row r's key and value appended to {@code caches[r]} at
     * {@code layer}.
     *
     * <p>Rows whose caches continue the same prefix attend to it together: their queries are
     * one product with the prefix's keys and their weights one product with its values, so a
     * batch of B sequences over a P-token shared prompt reads the prefix's P positions once, not
     * B times. Each row's own positions are attended per row. Under a sliding window a row sees
     * only its window's positions: the prefix's older ones are masked, and a row whose window
     * starts past the prefix attends to its own positions alone.
     *
     * @param kind how the products become scores, and the window
     * @param masks the step's masks of prefix positions before a window (shared by its layers)
     * @return {@code [B, Hq * d]}
     */
    static NDArray step(NDArray q, NDArray k, NDArray v, KvCache[] caches, int layer, AttentionKind kind, DataType dt,
                        PrefixMasks masks) {
        int b = caches.length;
        long hq = q.getShape().get(1);
        long hkv = k.getShape().get(1);
        long d = q.getShape().get(2);
        long g = hq / hkv;
        // Batched where it can be, one split per tensor where it cannot: on a CPU each DJL op
        // costs tens of microseconds whatever its size, and the per-row ones run B times per
        // layer per step. Queries are scaled once and grouped as [B, Hkv, group, d]; keys and
        // values go [Hkv, B, d], whose split gives each row's [Hkv, 1, d] as the cache takes it.
        NDArray qs = kind.stepQueries(q, d).reshape(b, hkv, g, d);
        NDList qRows = b == 1 ? new NDList(qs) : qs.split(b, 0);
        NDArray kt = k.transpose(1, 0, 2);
        NDArray vt = v.transpose(1, 0, 2);
        NDList kRows = b == 1 ? new NDList(kt) : kt.split(b, 1);
        NDList vRows = b == 1 ? new NDList(vt) : vt.split(b, 1);
        NDArray[] out = new NDArray[b];
        Map<KvPrefix, List<Integer>> groups = new IdentityHashMap<>();
        for (int r = 0; r < b; r++) {
            // the new position: the cache counts it once every layer has appended
            int position = caches[r].length();
            NDArray[] kv = caches[r].append(layer, kRows.get(r), vRows.get(r));
            KvPrefix p = caches[r].prefix();
            int base = p == null ? 0 : p.length();
            int first = kind.firstVisible(position);
            if (p == null || first >= base) {
                NDArray keys = kv[0];
                NDArray values = kv[1];
                if (first > base) {
                    NDIndex window = new NDIndex().addAllDim().addSliceDim(first - base, position - base + 1);
                    keys = keys.get(window);
                    values = values.get(window);
                }
                // [1, Hkv, g, d] x [Hkv, d, S] broadcasts to [1, Hkv, g, S]: the newest position sees all of them
                out[r] = Precision.softmax(kind.stepScores(qRows.get(r).matMul(keys.transpose(0, 2, 1))), dt).matMul(values);
            } else {
                groups.computeIfAbsent(p, x -> new ArrayList<>()).add(r);
            }
        }
        for (Map.Entry<KvPrefix, List<Integer>> e : groups.entrySet()) {
            sharedStep(qs, e.getKey(), e.getValue(), caches, layer, kind, out, dt, masks);
        }
        return (b == 1 ? out[0] : NDArrays.concat(new NDList(out), 0)).reshape(b, hq * d);
    }

    /**
     * The rows {@code rows} of a step over their shared prefix and their own positions, into
     * {@code out[r]} as {@code [1, Hkv, g, d]}; each row's window starts inside the prefix.
     */
    private static void sharedStep(NDArray qs, KvPrefix prefix, List<Integer> rows, KvCache[] caches, int layer,
                                   AttentionKind kind, NDArray[] out, DataType dt, PrefixMasks masks) {
        long hkv = qs.getShape().get(1);
        long g = qs.getShape().get(2);
        long d = qs.getShape().get(3);
        int n = rows.size();
        int shared = prefix.length();
        NDArray q = n == qs.getShape().get(0) ? qs : qs.get(qs.getManager().create(rows.stream().mapToLong(Integer::longValue).toArray()));
        // [Hkv, n * g, d] x [Hkv, d, P]: every row's queries against the prefix in one product
        NDArray qg = q.transpose(1, 0, 2, 3).reshape(hkv, n * g, d);
        NDArray sPrefix = kind.stepScores(qg.matMul(prefix.key(layer).transpose(0, 2, 1)));
        NDList perRow = n == 1 ? new NDList(sPrefix) : sPrefix.split(n, 1);
        NDList wPrefix = new NDList(n);
        NDArray[] own = new NDArray[n];
        for (int j = 0; j < n; j++) {
            KvCache c = caches[rows.get(j)];
            NDArray qRow = qg.get(new NDIndex().addAllDim().addSliceDim(j * g, (j + 1) * g));
            NDArray kOwn = c.key(layer);
            NDArray sOwn = kind.stepScores(qRow.matMul(kOwn.transpose(0, 2, 1)));
            NDArray sShared = perRow.get(j);
            int first = kind.firstVisible(c.length());
            if (first > 0) {
                sShared = sShared.add(masks.hiding(shared, first));
            }
            NDList w = Precision.softmax(sShared.concat(sOwn, 2), dt).split(new long[] {shared}, 2);
            wPrefix.add(w.get(0));
            own[j] = w.get(1).matMul(c.value(layer));
        }
        NDArray wp = n == 1 ? wPrefix.get(0) : NDArrays.concat(wPrefix, 1);
        NDArray o = sum(wp.matMul(prefix.value(layer)), n == 1 ? own[0] : NDArrays.concat(new NDList(own), 1), dt);
        // [Hkv, n * g, d] -> per row [1, Hkv, g, d]
        NDArray byRow = o.reshape(hkv, n, g, d).transpose(1, 0, 2, 3);
        NDList split = n == 1 ? new NDList(byRow) : byRow.split(n, 0);
        for (int j = 0; j < n; j++) {
            out[rows.get(j)] = split.get(j);
        }
    }
}
