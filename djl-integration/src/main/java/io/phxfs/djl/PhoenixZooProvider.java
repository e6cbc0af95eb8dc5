package io.phxfs.djl;

import ai.djl.repository.zoo.ModelZoo;
import ai.djl.repository.zoo.ZooProvider;

/** Registers the {@code phoenix} model zoo with DJL (ServiceLoader). */
public final class PhoenixZooProvider implements ZooProvider {
    /** A provider; ServiceLoader instantiates it. */
    public PhoenixZooProvider() {
    }

    @Override
    public String getName() {
        return "phoenix";
    }

    @Override
    public ModelZoo getModelZoo() {
        return new PhoenixModelZoo();
    }
}
