package io.phxfs.serving.text;

import java.util.AbstractMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Jinja2's {@code loop} variable: index, index0, revindex, revindex0, first, last, length,
 * depth, depth0, previtem and nextitem (undefined at the ends), and the methods cycle and
 * changed; break and continue mark it. A map, so that jinjava reads its attributes without
 * reflection.
 */
final class LoopContext extends AbstractMap<String, Object> {
    private final List<Object> items;
    private int index0;
    private boolean broken;
    private boolean continued;
    private List<Object> lastChanged;

    LoopContext(List<Object> items) {
        this.items = items;
    }

    void moveTo(int index) {
        index0 = index;
        continued = false;
    }

    void doBreak() {
        broken = true;
        continued = true;
    }

    void doContinue() {
        continued = true;
    }

    boolean broken() {
        return broken;
    }

    /** True once break or continue ran: the rest of this iteration's body is skipped. */
    boolean skipRest() {
        return continued;
    }

    Object cycle(List<Object> values) {
        if (values.isEmpty()) {
            throw PyErrors.type("no items for cycling given");
        }
        return values.get(index0 % values.size());
    }

    boolean changed(List<Object> values) {
        if (lastChanged != null && PyValues.eq(lastChanged, values)) {
            return false;
        }
        lastChanged = values;
        return true;
    }

    @Override
    public Object get(Object key) {
        return snapshot().get(key);
    }

    @Override
    public boolean containsKey(Object key) {
        return snapshot().containsKey(key);
    }

    @Override
    public Set<Entry<String, Object>> entrySet() {
        return snapshot().entrySet();
    }

    private Map<String, Object> snapshot() {
        Map<String, Object> m = new LinkedHashMap<>();
        int n = items.size();
        m.put("index", (long) index0 + 1);
        m.put("index0", (long) index0);
        m.put("revindex", (long) (n - index0));
        m.put("revindex0", (long) (n - index0 - 1));
        m.put("first", index0 == 0);
        m.put("last", index0 == n - 1);
        m.put("length", (long) n);
        m.put("depth", 1L);
        m.put("depth0", 0L);
        if (index0 > 0) {
            m.put("previtem", items.get(index0 - 1));
        }
        if (index0 < n - 1) {
            m.put("nextitem", items.get(index0 + 1));
        }
        return m;
    }

    @Override
    public String toString() {
        return "<LoopContext " + (index0 + 1) + "/" + items.size() + ">";
    }
}
