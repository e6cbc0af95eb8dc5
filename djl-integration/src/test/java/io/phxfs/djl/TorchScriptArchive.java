package io.phxfs.djl;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

/**
 * Writes a TorchScript archive (the zip {@code torch.jit.save} writes: data.pkl, constants.pkl,
 * code/__torch__.py, data/N, version) of one module, {@code y = x @ weight.T + bias}, with float32
 * parameters. No torch on the build machine: the tests write it themselves, and DJL's libtorch
 * loads it as it loads any TorchScript file.
 */
final class TorchScriptArchive {
    private TorchScriptArchive() {
    }

    private static final String CODE = """
            class Linear(Module):
              __parameters__ = ["weight", "bias", ]
              __buffers__ = []
              weight : Tensor
              bias : Tensor
              training : bool
              def forward(self: __torch__.Linear,
                x: Tensor) -> Tensor:
                _0 = torch.add(torch.matmul(x, torch.t(self.weight)), self.bias)
                return _0
            """;

    /** Pickle protocol 2, what TorchScript's pickler writes. */
    private static final class Pickle {
        final ByteArrayOutputStream b = new ByteArrayOutputStream();

        Pickle op(int... bytes) {
            for (int x : bytes) {
                b.write(x);
            }
            return this;
        }

        Pickle global(String module, String name) {
            b.write('c');
            b.writeBytes((module + "\n" + name + "\n").getBytes(StandardCharsets.UTF_8));
            return this;
        }

        Pickle str(String s) {
            byte[] u = s.getBytes(StandardCharsets.UTF_8);
            b.write('X');
            writeInt(u.length);
            b.writeBytes(u);
            return this;
        }

        Pickle integer(long v) {
            b.write('J');
            writeInt((int) v);
            return this;
        }

        Pickle longs(long[] v) {
            op('(');
            for (long x : v) {
                integer(x);
            }
            return op('t');
        }

        private void writeInt(int v) {
            b.write(v);
            b.write(v >>> 8);
            b.write(v >>> 16);
            b.write(v >>> 24);
        }
    }

    private static void tensor(Pickle p, String key, long[] shape) {
        long numel = 1;
        for (long d : shape) {
            numel *= d;
        }
        long[] stride = new long[shape.length];
        long s = 1;
        for (int i = shape.length - 1; i >= 0; i--) {
            stride[i] = s;
            s *= shape[i];
        }
        p.global("torch._utils", "_rebuild_tensor_v2").op('(');
        p.op('(').str("storage").global("torch", "FloatStorage").str(key).str("cpu").integer(numel).op('t').op('Q');
        p.integer(0).longs(shape).longs(stride).op(0x89);
        p.global("collections", "OrderedDict").op(')').op('R');
        p.op('t').op('R');
    }

    /**
     * Writes the archive.
     *
     * @param file the .pt file
     * @param weight {@code [out, in]} row-major float32 values
     * @param bias {@code [out]}
     */
    static void writeLinear(Path file, float[] weight, float[] bias, int out, int in) throws IOException {
        Pickle data = new Pickle().op(0x80, 2).global("__torch__", "Linear").op(')').op(0x81).op('}').op('(');
        data.str("training").op(0x89);
        data.str("weight");
        tensor(data, "0", new long[] {out, in});
        data.str("bias");
        tensor(data, "1", new long[] {out});
        data.op('u').op('b').op('.');
        Map<String, byte[]> records = new LinkedHashMap<>();
        records.put("data.pkl", data.b.toByteArray());
        records.put("code/__torch__.py", CODE.getBytes(StandardCharsets.UTF_8));
        records.put("constants.pkl", new Pickle().op(0x80, 2).op(')').op('.').b.toByteArray());
        records.put("data/0", floats(weight));
        records.put("data/1", floats(bias));
        records.put("version", "3\n".getBytes(StandardCharsets.UTF_8));
        records.put("byteorder", "little".getBytes(StandardCharsets.UTF_8));
        try (OutputStream os = Files.newOutputStream(file); ZipOutputStream zip = new ZipOutputStream(os)) {
            for (Map.Entry<String, byte[]> r : records.entrySet()) {
                ZipEntry e = new ZipEntry("linear/" + r.getKey());
                e.setMethod(ZipEntry.STORED);
                e.setSize(r.getValue().length);
                CRC32 crc = new CRC32();
                crc.update(r.getValue());
                e.setCrc(crc.getValue());
                zip.putNextEntry(e);
                zip.write(r.getValue());
                zip.closeEntry();
            }
        }
    }

    private static byte[] floats(float[] v) {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(v.length * 4).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        for (float f : v) {
            b.putFloat(f);
        }
        return b.array();
    }
}
