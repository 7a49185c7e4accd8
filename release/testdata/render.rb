# Renders one template of a BOSH job as the director does: ERB with trim
# mode "-", the job spec's property defaults under the given properties,
# and the helpers templates call (p, if_p, spec, link, if_link).
#
#   ruby render.rb JOB_DIR TEMPLATE [PROPERTIES_JSON [LINKS_JSON]]
#
# Errors (an unknown property, a missing link) end it with status 1 and
# the director's message on stderr.
require 'erb'
require 'json'
require 'ostruct'
require 'yaml'

class UnknownProperty < StandardError; end
class UnknownLink < StandardError; end

# Context is what a template's code sees.
class Context
  def initialize(spec, properties, links)
    @properties = {}
    (spec['properties'] || {}).each do |name, definition|
      set(@properties, name, definition['default']) if definition.is_a?(Hash) && definition.key?('default')
    end
    flatten(properties).each { |name, value| set(@properties, name, value) }
    @links = links
    @spec = OpenStruct.new(
      name: spec['name'], id: 'f1f4fc8b-0f2c-4a4e-9b8b-4a2c1c5d6e7f', index: 0, az: 'z1',
      deployment: 'cf', address: '10.0.0.10', ip: '10.0.0.10', bootstrap: true,
      job: OpenStruct.new(name: spec['name']), networks: OpenStruct.new(default: OpenStruct.new(ip: '10.0.0.10'))
    )
  end

  attr_reader :spec

  def p(*args)
    names = Array(args[0])
    names.each do |name|
      value = get(@properties, name)
      return value unless value.nil?
    end
    return args[1] if args.length == 2
    raise UnknownProperty, "Can't find property '#{names.join("', '")}'"
  end

  def if_p(*names)
    values = names.map { |name| get(@properties, name) }
    yield(*values) unless values.any?(&:nil?)
  end

  def link(name)
    raise UnknownLink, "Can't find link '#{name}'" unless @links.key?(name)
    OpenStruct.new(@links[name])
  end

  def if_link(name)
    yield link(name) if @links.key?(name)
  end

  def render(template)
    ERB.new(template, trim_mode: '-').result(binding)
  end

  private

  def flatten(hash, prefix = nil)
    hash.each_with_object({}) do |(k, v), out|
      key = prefix ? "#{prefix}.#{k}" : k.to_s
      if v.is_a?(Hash) && !v.empty?
        out.merge!(flatten(v, key))
      else
        out[key] = v
      end
    end
  end

  def set(tree, name, value)
    *parents, last = name.split('.')
    parents.each { |k| tree = (tree[k] ||= {}) }
    tree[last] = value
  end

  def get(tree, name)
    name.split('.').reduce(tree) { |node, k| node.is_a?(Hash) ? node[k] : nil }
  end
end

job_dir, template = ARGV[0], ARGV[1]
properties = JSON.parse(ARGV[2] || '{}')
links = JSON.parse(ARGV[3] || '{}')
spec = YAML.safe_load(File.read(File.join(job_dir, 'spec')))
begin
  print Context.new(spec, properties, links).render(File.read(File.join(job_dir, 'templates', template)))
rescue UnknownProperty, UnknownLink => e
  warn "Error filling in template '#{template}': #{e.message}"
  exit 1
end
