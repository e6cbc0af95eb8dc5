/**
 * Safetensors weights into host and device memory through Phoenix.
 *
 * <ul>
 *   <li>{@link io.phxfs.safetensors.SafetensorsParser}: strict header validation
 *       ({@link io.phxfs.safetensors.SafetensorsFormatException} names file, tensor and problem);</li>
 *   <li>{@link io.phxfs.safetensors.ModelFiles}: a file, a model directory or a sharded index;</li>
 *   <li>{@link io.phxfs.safetensors.ReadPlan}: read groups, 4 KiB-aligned file ranges and buffer slots;</li>
 *   <li>{@link io.phxfs.safetensors.WeightLoader}: executes a plan into one buffer per target;
 *       {@link io.phxfs.safetensors.LoadedModel} owns the memory.</li>
 * </ul>
 */
package io.phxfs.safetensors;
