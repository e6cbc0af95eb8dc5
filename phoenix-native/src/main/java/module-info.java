/**
 * libphoenix.so as a resource under {@code native/<os>-<arch>/}, no classes. A named module
 * rather than an automatic one because the name the JDK would derive from the jar,
 * {@code phoenix.native}, is not a legal module name ({@code native} is a keyword): on a
 * module path the jar would stop the JVM at start-up. io.phxfs.core requires it so that the
 * library is resolved along with the bindings; resources outside any package are not
 * encapsulated, so NativeLibrary finds it through its class loader as on the class path.
 */
module io.phxfs.libphoenix {
}
