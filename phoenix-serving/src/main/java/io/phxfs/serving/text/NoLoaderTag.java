package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.tag.Tag;
import com.hubspot.jinjava.tree.TagNode;

/**
 * include, import, from and extends, which in transformers' environment (a template from a
 * string, no loader) fail; jinjava would read other templates from the class path.
 */
final class NoLoaderTag implements Tag {
    private static final long serialVersionUID = 1L;

    private final String name;

    NoLoaderTag(String name) {
        this.name = name;
    }

    @Override
    public String getName() {
        return name;
    }

    @Override
    public String getEndTagName() {
        return null;
    }

    @Override
    public String interpret(TagNode tagNode, JinjavaInterpreter interpreter) {
        throw new TemplateAbort("TypeError: no loader for this environment specified ('" + name + "', line "
                + tagNode.getLineNumber() + ")", false);
    }
}
