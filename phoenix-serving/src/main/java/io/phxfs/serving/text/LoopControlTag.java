package io.phxfs.serving.text;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.tag.Tag;
import com.hubspot.jinjava.tree.TagNode;

/** {@code {% break %}} and {@code {% continue %}} (Jinja2's loopcontrols) for {@link PyForTag}'s loops. */
final class LoopControlTag implements Tag {
    private static final long serialVersionUID = 1L;

    private final String name;

    LoopControlTag(String name) {
        this.name = name;
    }

    @Override
    public String getName() {
        return name;
    }

    @Override
    public String interpret(TagNode tagNode, JinjavaInterpreter interpreter) {
        if (!(interpreter.getContext().get("loop") instanceof LoopContext loop)) {
            throw new TemplateAbort("TemplateSyntaxError: '" + name + "' outside of a loop (line "
                    + tagNode.getLineNumber() + ")", false);
        }
        if (name.equals("break")) {
            loop.doBreak();
        } else {
            loop.doContinue();
        }
        return "";
    }

    @Override
    public String getEndTagName() {
        return null;
    }
}
