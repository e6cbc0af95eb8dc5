package io.phxfs.djl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.repository.zoo.ZooModel;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A decode step of several sequences at once ({@link CausalLmBlock#decode}) against each
 * sequence computed alone, and the preallocated cache against the growing one: the same logits
 * within float32 rounding, for sequences of different lengths in one batch.
 */
class BatchedDecodeTest {
    @ParameterizedTest
    @ValueSource(strings = {"tiny-llama", "tiny-gpt2"})
    void aBatchedStepEqualsEachSequenceAloneAndPreallocatedEqualsGrowing(String fixture) throws Exception {
        long[][] prompts = {{1, 7, 42, 300, 5}, {3, 9}, {11, 12, 13, 14, 15, 16, 17, 18, 19}};
        long[] next = {17, 23, 99};
        try (ZooModel<long[], float[]> model = TestFixtures.zooModel(fixture);
             NDManager m = NDManager.newBaseManager(Device.cpu(), DjlRuntime.ENGINE)) {
            CausalLmBlock block = (CausalLmBlock) model.getBlock();
            int b = prompts.length;
            KvCache[] alone = new KvCache[b];
            KvCache[] batched = new KvCache[b];
            float[][] expected = new float[b][];
            for (int r = 0; r < b; r++) {
                alone[r] = block.newCache();
                block.logits(m.create(prompts[r]), alone[r]);
                NDArray l = block.logits(m.create(new long[] {next[r]}), alone[r]);
                expected[r] = l.toFloatArray();
                // preallocated, room for 16 positions
                NDArray[] keys = new NDArray[block.layers()];
                NDArray[] values = new NDArray[block.layers()];
                for (int i = 0; i < keys.length; i++) {
                    keys[i] = m.zeros(new Shape(block.kvHeads(), 16, block.headDim()), DataType.FLOAT32);
                    values[i] = m.zeros(new Shape(block.kvHeads(), 16, block.headDim()), DataType.FLOAT32);
                }
                batched[r] = block.newCache(keys, values);
                block.logits(m.create(prompts[r]), batched[r]);
                assertEquals(prompts[r].length, batched[r].length());
            }
            NDArray logits = block.decode(m, next, batched);
            assertEquals(new Shape(b, block.vocabSize()), logits.getShape());
            for (int r = 0; r < b; r++) {
                float d = TestFixtures.maxDiff(expected[r], logits.get(r).toFloatArray());
                assertTrue(d < 1e-4, fixture + " row " + r + ": batched differs from alone by " + d);
                assertEquals(prompts[r].length + 1, batched[r].length());
                assertEquals(alone[r].length(), batched[r].length());
                float kd = TestFixtures.maxDiff(alone[r].key(0).toFloatArray(), batched[r].key(0).toFloatArray());
                assertTrue(kd < 1e-5, "cached keys differ by " + kd);
            }
            // a second step, so that the in-place writes after the first are used too
            NDArray again = block.decode(m, new long[] {5, 6, 7}, batched);
            for (int r = 0; r < b; r++) {
                float[] one = block.logits(m.create(new long[] {new long[] {5, 6, 7}[r]}), alone[r]).toFloatArray();
                float d = TestFixtures.maxDiff(one, again.get(r).toFloatArray());
                assertTrue(d < 1e-4, fixture + " step 2 row " + r + ": " + d);
            }
            // a full preallocated cache refuses the next position instead of writing past its end
            NDArray[] k1 = {m.zeros(new Shape(block.kvHeads(), 2, block.headDim()))};
            NDArray[] ks = new NDArray[block.layers()];
            NDArray[] vs = new NDArray[block.layers()];
            for (int i = 0; i < ks.length; i++) {
                ks[i] = k1[0].duplicate();
                vs[i] = k1[0].duplicate();
            }
            KvCache small = block.newCache(ks, vs);
            block.logits(m.create(new long[] {1, 2}), small);
            assertThrows(IllegalArgumentException.class, () -> block.decode(m, new long[] {3}, new KvCache[] {small}));
            for (int r = 0; r < b; r++) {
                alone[r].close();
                batched[r].close();
            }
        }
    }
}
