package io.phxfs.serving.guided;

/**
 * One configuration of the pushdown matcher: the frame that reads the next byte on top of the
 * frames waiting for the value it is reading to finish. Persistent (each push shares the stack
 * below), with value equality and a hash computed once, so that states reached by different byte
 * paths compare equal and configurations can be deduplicated cheaply.
 */
final class FrameStack {
    private final Frame head;
    private final FrameStack below;
    private final int hash;

    FrameStack(Frame head, FrameStack below) {
        this.head = head;
        this.below = below;
        this.hash = head.hashCode() * 31 + (below == null ? 0 : below.hash);
    }

    Frame head() {
        return head;
    }

    /** The frames under the head; null under the bottom frame. */
    FrameStack below() {
        return below;
    }

    FrameStack push(Frame f) {
        return new FrameStack(f, this);
    }

    FrameStack replaceHead(Frame f) {
        return new FrameStack(f, below);
    }

    @Override
    public int hashCode() {
        return hash;
    }

    @Override
    public boolean equals(Object o) {
        // iterative: nesting depth is bounded only by memory, and shared tails end the walk early
        FrameStack a = this;
        Object b = o;
        while (a != b) {
            if (!(b instanceof FrameStack s) || a == null || s.hash != a.hash || !a.head.equals(s.head)) {
                return false;
            }
            a = a.below;
            b = s.below;
        }
        return true;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("[");
        for (FrameStack s = this; s != null; s = s.below) {
            sb.append(s.head).append(s.below == null ? "]" : " | ");
        }
        return sb.toString();
    }
}
