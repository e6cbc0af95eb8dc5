package io.phxfs.serving.tools;

import java.security.SecureRandom;
import java.util.function.Supplier;

/** The ids of calls: random letters and digits. */
public final class ToolCallIds {
    private ToolCallIds() {
    }

    private static final String ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    private static final SecureRandom RANDOM = new SecureRandom();

    /** OpenAI's shape: {@code call_} and 24 letters and digits. */
    public static final Supplier<String> OPENAI = () -> "call_" + random(24);

    /**
     * Exactly 9 letters and digits, as vLLM's mistral parser makes them: Mistral's chat templates
     * raise on any other {@code tool_call_id} when the client sends the conversation back.
     */
    public static final Supplier<String> MISTRAL = () -> random(9);

    private static String random(int n) {
        StringBuilder b = new StringBuilder(n);
        for (int i = 0; i < n; i++) {
            b.append(ALPHABET.charAt(RANDOM.nextInt(ALPHABET.length())));
        }
        return b.toString();
    }
}
