"""A role's template rendered as the template module renders it, for the unit tests (``from _role_templates import
render_template``)."""
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

try:
    from ansible.template import trust_as_template  # ansible-core 2.19: a template must be trusted to be rendered
except ImportError:  # 2.16 to 2.18 render any string
    def trust_as_template(text):
        return text


def render_template_text(text, variables):
    """``text`` (a template or a role variable's value) rendered with ``variables`` (``ansible_managed`` defaults
    to a marker)."""
    values = dict({'ansible_managed': 'Ansible managed'}, **variables)
    return Templar(loader=DataLoader(), variables=values).template(trust_as_template(text))


def render_template(path, variables):
    """The text of the template at ``path`` rendered with ``variables``."""
    with open(path, encoding='utf-8') as handle:
        return render_template_text(handle.read(), variables)
