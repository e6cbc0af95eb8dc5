package io.phxfs.safetensors;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What a directory without {@code model.safetensors} or its index holds instead, for the error
 * that says so: the safetensors files and indexes of other writers' names (diffusers'
 * diffusion_pytorch_model, PEFT's adapter_model, Mistral's consolidated, transformers' variants
 * such as model.fp16.safetensors), else those of its subdirectories (a diffusers pipeline keeps
 * each part in one: unet/, vae/, text_encoder/), else the PyTorch checkpoints that need
 * converting and the GGUF files, which are another format.
 */
final class OtherModelFiles {
    private OtherModelFiles() {
    }

    /** Names shown of each kind. */
    private static final int SHOWN = 4;

    /** Subdirectories looked into, at most (a pipeline has a handful). */
    private static final int SUBDIRECTORIES = 64;

    /**
     * "; it holds X, Y: give the file (or the index) to load" and the like, or empty when
     * {@code dir} holds none of these or cannot be listed (mode 0711).
     */
    static String describe(Path dir) {
        List<String> safetensors = new ArrayList<>();
        List<String> pytorch = new ArrayList<>();
        List<String> gguf = new ArrayList<>();
        List<Path> subdirectories = new ArrayList<>();
        try (var entries = Files.newDirectoryStream(dir)) {
            for (Path p : entries) {
                String n = p.getFileName().toString();
                if (isSafetensors(n)) {
                    safetensors.add(n);
                } else if (n.endsWith(".bin") || n.endsWith(".pt") || n.endsWith(".pth")) {
                    pytorch.add(n);
                } else if (n.endsWith(".gguf")) {
                    gguf.add(n);
                } else if (!n.startsWith(".") && Files.isDirectory(p)) {
                    subdirectories.add(p);
                }
            }
        } catch (IOException | RuntimeException e) {
            return ""; // the names cannot be listed, and the message stands without them
        }
        if (!safetensors.isEmpty()) {
            return "; it holds " + shown(safetensors) + ": give the file (or the index) to load";
        }
        List<String> inside = safetensorsOf(subdirectories);
        if (!inside.isEmpty()) {
            return "; its subdirectories hold " + shown(inside) + ": give the file (or the index) to load";
        }
        StringBuilder b = new StringBuilder();
        if (!pytorch.isEmpty()) {
            b.append("; it holds ").append(shown(pytorch)).append(", PyTorch checkpoints: convert them to safetensors");
        }
        if (!gguf.isEmpty()) {
            b.append(pytorch.isEmpty() ? "; it holds " : ", and ").append(shown(gguf))
                    .append(", GGUF files (llama.cpp's format), which are not safetensors");
        }
        return b.toString();
    }

    /** A safetensors file, or an index of one (transformers' variants: model.safetensors.index.fp16.json). */
    private static boolean isSafetensors(String name) {
        return name.endsWith(".safetensors") || name.contains(".safetensors.index") && name.endsWith(".json");
    }

    /** "sub/name" of the safetensors files directly in {@code subdirectories}, sorted. */
    private static List<String> safetensorsOf(List<Path> subdirectories) {
        Collections.sort(subdirectories);
        List<String> found = new ArrayList<>();
        for (Path sub : subdirectories.subList(0, Math.min(subdirectories.size(), SUBDIRECTORIES))) {
            try (var entries = Files.newDirectoryStream(sub)) {
                for (Path p : entries) {
                    String n = p.getFileName().toString();
                    if (isSafetensors(n)) {
                        found.add(sub.getFileName() + "/" + n);
                    }
                }
            } catch (IOException | RuntimeException e) {
                // one that cannot be listed says nothing; the others still do
            }
        }
        return found;
    }

    private static String shown(List<String> names) {
        Collections.sort(names);
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < Math.min(names.size(), SHOWN); i++) {
            b.append(i == 0 ? "" : ", ").append(Names.quote(names.get(i)));
        }
        return names.size() > SHOWN ? b + " and " + (names.size() - SHOWN) + " more" : b.toString();
    }
}
